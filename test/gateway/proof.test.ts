import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { domainSeparator, getAddress, hashTypedData, keccak256 } from "viem";
import { authorizationDigest, type DecodedProof, decodeProof, matchAndCheck } from "../../src/gateway/proof";
import { buildPaymentRequired } from "../../src/gateway/requirements";
import { Reason as Reasons } from "../../src/x402/reasons";
import { authorizationTypedData } from "../support/authorization";
import { newAccount, signProof } from "./fixtures";

const USDC_SEPOLIA = "0x036CbD53842c5426634e7929541eC2318f3dCF7e" as const;
const USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" as const;
const OTHER_TOKEN = "0x2222222222222222222222222222222222222222" as const;
const seller = newAccount().address;
const buyer = newAccount();

const required = buildPaymentRequired({
  resourceUrl: "https://gw.example.com/x402/cid/x",
  instruction: {
    name: "n",
    description: null,
    requirements: [
      { network: "base-sepolia", asset: USDC_SEPOLIA, pay_to: seller, amount: "10000" },
      { network: "base-sepolia", asset: OTHER_TOKEN, pay_to: seller, amount: "10000" },
      { network: "base", asset: USDC_BASE, pay_to: seller, amount: "30000" },
    ],
  },
  mimeType: "text/plain",
  maxTimeoutSeconds: 60,
});

async function check(opts: Partial<Parameters<typeof signProof>[0]> & { version: 1 | 2 }) {
  const { header } = await signProof({ account: buyer, asset: USDC_SEPOLIA, payTo: seller, amount: "10000", ...opts });
  const decoded = decodeProof(header);
  if (!decoded.ok) return decoded;
  return matchAndCheck(decoded.value, required.accepts);
}

function reasonOf(r: Awaited<ReturnType<typeof check>>) {
  return r.ok ? "ok" : r.rejection.reason;
}

describe("decodeProof", () => {
  test("decodes a v1 and a v2 proof into one shape", async () => {
    for (const version of [1, 2] as const) {
      const { header, nonce } = await signProof({
        version,
        account: buyer,
        asset: USDC_SEPOLIA,
        payTo: seller,
        amount: "10000",
      });
      const d = decodeProof(header);
      expect(d.ok).toBe(true);
      if (!d.ok) continue;
      expect(d.value.x402Version).toBe(version);
      expect(d.value.network).toBe("base-sepolia");
      expect(d.value.from).toBe(buyer.address);
      expect(d.value.nonce).toBe(nonce.toLowerCase() as never);
      expect(d.value.value).toBe(10000n);
      expect(d.value.proofHash).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  test("undecodable headers are invalid_payload", () => {
    for (const bad of [
      "",
      "!!!",
      "bm90IGpzb24=",
      Buffer.from('{"x402Version":1}').toString("base64"),
      "a".repeat(40000),
    ]) {
      const d = decodeProof(bad);
      expect(d.ok).toBe(false);
      if (!d.ok) expect(d.rejection.reason).toBe(Reasons.invalidPayload);
    }
  });

  test("a non-hex nonce or a short address does not decode", async () => {
    const { payload } = await signProof({
      version: 1,
      account: buyer,
      asset: USDC_SEPOLIA,
      payTo: seller,
      amount: "10000",
    });
    const auth = (payload.payload as { authorization: Record<string, string> }).authorization;
    for (const patch of [{ nonce: "0x1234" }, { to: "0x1234" }, { value: "-1" }, { validBefore: "soon" }]) {
      const forged = { ...payload, payload: { ...(payload.payload as object), authorization: { ...auth, ...patch } } };
      expect(decodeProof(Buffer.from(JSON.stringify(forged)).toString("base64")).ok).toBe(false);
    }
  });
});

describe("matchAndCheck", () => {
  test("a correct proof matches its requirement, v1 and v2", async () => {
    for (const version of [1, 2] as const) {
      const r = await check({ version });
      expect(r.ok).toBe(true);
      if (r.ok) expect(r.value.asset).toBe(USDC_SEPOLIA);
    }
  });

  test("v1 tells two assets on one network apart by the signature's domain", async () => {
    const r = await check({ version: 1, asset: OTHER_TOKEN });
    expect(r.ok && r.value.asset).toBe(OTHER_TOKEN);
  });

  test("v1 may pay more than the price, v2 must pay it exactly", async () => {
    expect(reasonOf(await check({ version: 1, value: "20000" }))).toBe("ok");
    expect(reasonOf(await check({ version: 2, value: "20000" }))).toBe(Reasons.authorizationValueMismatch);
  });

  test("underpaid", async () => {
    expect(reasonOf(await check({ version: 1, value: "9999" }))).toBe(Reasons.authorizationValue);
    expect(reasonOf(await check({ version: 2, value: "9999" }))).toBe(Reasons.authorizationValueMismatch);
  });

  test("v2 whose accepted amount is not the price does not match", async () => {
    expect(reasonOf(await check({ version: 2, amount: "1", value: "1" }))).toBe(Reasons.noMatchingRequirement);
  });

  test("wrong recipient", async () => {
    expect(reasonOf(await check({ version: 1, payTo: newAccount().address }))).toBe(Reasons.recipientMismatch);
    // v2 names payTo in `accepted` too: no offer pays that wallet.
    expect(reasonOf(await check({ version: 2, payTo: newAccount().address }))).toBe(Reasons.noMatchingRequirement);
  });

  test("wrong network: a network not offered, or a proof signed for another chain than it claims (trap 7)", async () => {
    expect(reasonOf(await check({ version: 1, claimedNetwork: "polygon" }))).toBe(Reasons.invalidNetwork);
    expect(reasonOf(await check({ version: 2, claimedNetwork: "eip155:137" }))).toBe(Reasons.invalidNetwork);
    // Signed for Base mainnet's chain id while claiming base-sepolia.
    expect(reasonOf(await check({ version: 1, chainId: 8453 }))).toBe(Reasons.signature);
    // Mainnet's EIP-712 name on Sepolia passes a naive verify and fails at settlement: refuse now.
    expect(reasonOf(await check({ version: 1, domainName: "USD Coin" }))).toBe(Reasons.signature);
  });

  test("expired and not yet valid", async () => {
    const now = Math.floor(Date.now() / 1000);
    expect(reasonOf(await check({ version: 1, validBefore: now - 1 }))).toBe(Reasons.validBefore);
    expect(reasonOf(await check({ version: 2, validAfter: now + 120 }))).toBe(Reasons.validAfter);
  });

  test("forged signature: signed by another key, or garbage of the right length", async () => {
    const other = newAccount();
    const { payload } = await signProof({
      version: 1,
      account: other,
      asset: USDC_SEPOLIA,
      payTo: seller,
      amount: "10000",
    });
    const signedByOther = (payload.payload as { signature: `0x${string}` }).signature;
    expect(reasonOf(await check({ version: 1, signature: signedByOther }))).toBe(Reasons.signature);
    expect(reasonOf(await check({ version: 2, signature: `0x${"ab".repeat(65)}` }))).toBe(Reasons.signature);
    expect(reasonOf(await check({ version: 1, signature: "0x1234" }))).toBe(Reasons.signature);
  });

  test("a smart-wallet signature (longer than 65 bytes) is left to the facilitator", async () => {
    expect(reasonOf(await check({ version: 1, signature: `0x${"ab".repeat(200)}` }))).toBe("ok");
  });

  test("a scheme we do not offer", async () => {
    const { payload } = await signProof({
      version: 1,
      account: buyer,
      asset: USDC_SEPOLIA,
      payTo: seller,
      amount: "10000",
    });
    const d = decodeProof(Buffer.from(JSON.stringify({ ...payload, scheme: "upto" })).toString("base64"));
    expect(d.ok && reasonOf(await matchAndCheck(d.value, required.accepts))).toBe(Reasons.unsupportedScheme);
  });
});

describe("authorizationDigest", () => {
  test("equals viem's generic EIP-712 hash on both networks", async () => {
    for (const [network, asset, name, chainId] of [
      ["base-sepolia", USDC_SEPOLIA, "USDC", 84532],
      ["base", USDC_BASE, "USD Coin", 8453],
    ] as const) {
      const { header } = await signProof({
        version: 1,
        account: buyer,
        asset,
        payTo: seller,
        amount: "123456789",
        network,
      });
      const d = decodeProof(header);
      if (!d.ok) throw new Error("decode");
      const p = d.value;
      expect(authorizationDigest(p, { network, asset })).toBe(
        hashTypedData(
          authorizationTypedData(
            { name, version: "2", chainId, verifyingContract: asset },
            {
              from: p.from,
              to: p.to,
              value: p.value,
              validAfter: p.validAfter,
              validBefore: p.validBefore,
              nonce: p.nonce,
            },
          ),
        ),
      );
    }
  });

  test("equals viem's EIP-712 hash on 500 random authorizations (native keccak), and past 2^256 the old digest", () => {
    const domain = { name: "USDC", version: "2", chainId: 84532, verifyingContract: USDC_SEPOLIA } as const;
    const big = (bytes: number) => BigInt(`0x${randomBytes(bytes).toString("hex")}`);
    for (let i = 0; i < 500; i++) {
      const p = {
        from: getAddress(`0x${randomBytes(20).toString("hex")}`),
        to: getAddress(`0x${randomBytes(20).toString("hex")}`),
        value: big(1 + (i % 32)),
        validAfter: big(1 + (i % 8)),
        validBefore: big(1 + (i % 32)),
        nonce: `0x${randomBytes(32).toString("hex")}`,
      } as const;
      const expected = hashTypedData(authorizationTypedData(domain, p));
      expect(authorizationDigest(p as unknown as DecodedProof, { network: "base-sepolia", asset: USDC_SEPOLIA })).toBe(
        expected,
      );
    }
    // A value no uint256 holds (the model lets 78 digits through): no EIP-712 hash exists; the
    // digest stays what viem's keccak of the same words gave before (odd-length hex padded, not cut).
    const p = {
      from: buyer.address,
      to: seller,
      value: 10n ** 77n * 5n,
      validAfter: 0n,
      validBefore: 1n,
      nonce: `0x${"ab".repeat(32)}`,
    };
    const word = (n: bigint) => n.toString(16).padStart(64, "0");
    const typeHash = keccak256(
      Buffer.from(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)",
      ),
    ).slice(2);
    const struct = keccak256(
      `0x${typeHash}${p.from.slice(2).toLowerCase().padStart(64, "0")}${p.to.slice(2).toLowerCase().padStart(64, "0")}${word(p.value)}${word(p.validAfter)}${word(p.validBefore)}${p.nonce.slice(2)}`,
    ).slice(2);
    expect(word(p.value).length % 2).toBe(1);
    expect(authorizationDigest(p as unknown as DecodedProof, { network: "base-sepolia", asset: USDC_SEPOLIA })).toBe(
      keccak256(`0x1901${domainSeparator({ domain }).slice(2)}${struct}`),
    );
  });
});
