/**
 * The real `pinata` SDK against cidgate over a real port: every x402 call it
 * has, with only its endpoint URL changed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PinataSDK } from "pinata";
import { BASE_SEPOLIA_USDC, CID_V0, CID_V1, makeHarness, PAY_TO } from "../instructions/harness";

const h = await makeHarness();
let pinata: PinataSDK;
let readOnly: PinataSDK;

beforeAll(() => {
  h.app.listen({ port: 0, hostname: "127.0.0.1" });
  const endpointUrl = `http://127.0.0.1:${h.app.server!.port}/v3`;
  pinata = new PinataSDK({ pinataJwt: h.tokens.rw, endpointUrl });
  readOnly = new PinataSDK({ pinataJwt: h.tokens.read, endpointUrl });
});

afterAll(async () => {
  await h.app.stop(true);
});

describe("pinata SDK x402 client", () => {
  test("create, get, list over two pages, update, addCid, listCids, removeCid, delete", async () => {
    const created = await pinata.x402.createPaymentInstruction({
      name: "Premium",
      description: "Access to premium files",
      payment_requirements: [
        {
          network: "base-sepolia",
          asset: BASE_SEPOLIA_USDC,
          pay_to: PAY_TO.toLowerCase(),
          amount: "10000",
          description: "Access fee",
        },
      ],
    });
    const pi = created.data;
    expect(pi.version).toBe(1);
    expect(pi.payment_requirements[0]).toEqual({
      network: "base-sepolia",
      asset: BASE_SEPOLIA_USDC,
      pay_to: PAY_TO,
      amount: "10000",
      description: "Access fee",
    });

    const got = await pinata.x402.getPaymentInstruction(pi.id);
    expect(got.data).toEqual(pi);

    for (let i = 0; i < 2; i++) {
      await pinata.x402.createPaymentInstruction({
        name: `Other ${i}`,
        payment_requirements: [{ network: "eip155:84532", asset: BASE_SEPOLIA_USDC, pay_to: PAY_TO, amount: "1" }],
      });
    }
    const page1 = await pinata.x402.listPaymentInstructions({ limit: 2 });
    expect(page1.data.payment_instructions.map((p) => p.name)).toEqual(["Other 1", "Other 0"]);
    expect(page1.data.next_page_token).toBeString();
    const page2 = await pinata.x402.listPaymentInstructions({ limit: 2, pageToken: page1.data.next_page_token });
    expect(page2.data.payment_instructions.map((p) => p.id)).toEqual([pi.id]);
    expect(page2.data.next_page_token).toBeUndefined();
    const byName = await pinata.x402.listPaymentInstructions({ name: "Premium" });
    expect(byName.data.payment_instructions.map((p) => p.id)).toEqual([pi.id]);
    const byId = await pinata.x402.listPaymentInstructions({ id: pi.id });
    expect(byId.data.payment_instructions).toHaveLength(1);

    const updated = await pinata.x402.updatePaymentInstruction(pi.id, { name: "Premium v2" });
    expect(updated.data).toMatchObject({
      id: pi.id,
      name: "Premium v2",
      version: 2,
      description: "Access to premium files",
    });

    const added = await pinata.x402.addCid(pi.id, CID_V1);
    expect(added.data.payment_instruction_id).toBe(pi.id);
    expect(added.data.cid).toBe(CID_V1);
    expect(added.data.created_at).toBeString();
    await pinata.x402.addCid(pi.id, CID_V0);
    const byCid = await pinata.x402.listPaymentInstructions({ cid: CID_V1 });
    expect(byCid.data.payment_instructions.map((p) => p.id)).toEqual([pi.id]);

    const cids1 = await pinata.x402.listCids(pi.id, { limit: 1 });
    expect(cids1.data.cids).toHaveLength(1);
    const cids2 = await pinata.x402.listCids(pi.id, { limit: 1, pageToken: cids1.data.next_page_token });
    expect([...cids1.data.cids, ...cids2.data.cids].sort()).toEqual([CID_V0, CID_V1].sort());
    expect(cids2.data.next_page_token).toBeUndefined();

    expect(await pinata.x402.removeCid(pi.id, CID_V1)).toEqual({ data: {} });
    expect(await pinata.x402.removeCid(pi.id, CID_V0)).toEqual({ data: {} });
    expect((await pinata.x402.listCids(pi.id)).data.cids).toEqual([]);

    expect(await pinata.x402.deletePaymentInstruction(pi.id)).toEqual({ data: {} });
    await expect(pinata.x402.getPaymentInstruction(pi.id)).rejects.toThrow(/404|not_found/);
  });

  test("the SDK sees our errors: 409 for a CID of another instruction, 403 for a read token writing", async () => {
    const a = (
      await pinata.x402.createPaymentInstruction({
        name: "A",
        payment_requirements: [{ network: "base-sepolia", asset: BASE_SEPOLIA_USDC, pay_to: PAY_TO, amount: "5" }],
      })
    ).data;
    const b = (
      await pinata.x402.createPaymentInstruction({
        name: "B",
        payment_requirements: [{ network: "base-sepolia", asset: BASE_SEPOLIA_USDC, pay_to: PAY_TO, amount: "6" }],
      })
    ).data;
    await pinata.x402.addCid(a.id, CID_V1);
    await expect(pinata.x402.addCid(b.id, CID_V1)).rejects.toThrow(/409|conflict/);
    await expect(readOnly.x402.deletePaymentInstruction(b.id)).rejects.toThrow(/Authentication failed.*forbidden/);
    expect((await readOnly.x402.getPaymentInstruction(b.id)).data.id).toBe(b.id);
  });
});
