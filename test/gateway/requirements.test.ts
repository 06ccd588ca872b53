import { describe, expect, test } from "bun:test";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { parsePaymentRequired } from "@x402/core/schemas";
import { PaymentRequirementsSchema } from "x402/types";
import { buildPaymentRequired, rejectionPayload } from "../../src/gateway/requirements";

const payTo = "0x1111111111111111111111111111111111111111";
const instruction = {
  name: "Article",
  description: "Access fee",
  requirements: [
    {
      network: "base-sepolia" as const,
      asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
      pay_to: payTo,
      amount: "10000",
    },
    {
      network: "base" as const,
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      pay_to: payTo,
      amount: "20000",
      description: "Mainnet fee",
    },
  ],
};
const resourceUrl = "https://gw.example.com/x402/cid/bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
const required = buildPaymentRequired({ resourceUrl, instruction, mimeType: "text/markdown", maxTimeoutSeconds: 60 });

describe("402 bodies", () => {
  test("v1 body is exactly the X402.md shape, one accepts entry per requirement", () => {
    const body = JSON.parse(required.body);
    expect(body).toEqual({
      x402Version: 1,
      error: "Provide a valid X-PAYMENT header to access this content",
      accepts: [
        {
          scheme: "exact",
          network: "base-sepolia",
          maxAmountRequired: "10000",
          resource: resourceUrl,
          description: "Access fee",
          mimeType: "text/markdown",
          payTo: "0x1111111111111111111111111111111111111111",
          maxTimeoutSeconds: 60,
          asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
          extra: { name: "USDC", version: "2" },
        },
        {
          scheme: "exact",
          network: "base",
          maxAmountRequired: "20000",
          resource: resourceUrl,
          description: "Mainnet fee",
          mimeType: "text/markdown",
          payTo: "0x1111111111111111111111111111111111111111",
          maxTimeoutSeconds: 60,
          asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
          extra: { name: "USD Coin", version: "2" },
        },
      ],
    });
  });

  test("the legacy client's own schema accepts every entry (x402-fetch throws otherwise)", () => {
    for (const entry of JSON.parse(required.body).accepts)
      expect(() => PaymentRequirementsSchema.parse(entry)).not.toThrow();
  });

  test("PAYMENT-REQUIRED decodes with @x402/core into a valid v2 object with CAIP-2 networks", () => {
    const decoded = decodePaymentRequiredHeader(required.header);
    expect(parsePaymentRequired(decoded).success).toBe(true);
    expect(decoded).toEqual({
      x402Version: 2,
      error: "Provide a valid PAYMENT-SIGNATURE header to access this content",
      resource: { url: resourceUrl, description: "Access fee", mimeType: "text/markdown" },
      accepts: [
        {
          scheme: "exact",
          network: "eip155:84532",
          amount: "10000",
          asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
          payTo: "0x1111111111111111111111111111111111111111",
          maxTimeoutSeconds: 60,
          extra: { name: "USDC", version: "2" },
        },
        {
          scheme: "exact",
          network: "eip155:8453",
          amount: "20000",
          asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
          payTo: "0x1111111111111111111111111111111111111111",
          maxTimeoutSeconds: 60,
          extra: { name: "USD Coin", version: "2" },
        },
      ],
    } as never);
  });

  test("the header is standard padded base64, not URL-safe", () => {
    expect(required.header).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
  });

  test("a 403 carries the offer again with a machine reason", () => {
    const v1 = rejectionPayload(required, 1, "invalid_exact_evm_signature", "bad signature");
    expect(v1.body).toMatchObject({ x402Version: 1, error: "bad signature", reason: "invalid_exact_evm_signature" });
    expect(v1.body.accepts).toHaveLength(2);
    const v2 = rejectionPayload(required, 2, "x", "y");
    expect(v2.body.accepts[0]).toMatchObject({ network: "eip155:84532", amount: "10000" });
  });
});
