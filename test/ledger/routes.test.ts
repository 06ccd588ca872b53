import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { FacilitatorUnavailableError } from "../../src/facilitator/types";
import { createToken } from "../../src/http/auth";
import { createPaymentStore } from "../../src/ledger/store";
import { type Fixture, fixture, JWT_SECRET, makeApp } from "../gateway/fixtures";
import { CID_A, claim, PAYER } from "./claims";

let f: Fixture;
let app: ReturnType<typeof makeApp>;
const read = await createToken(JWT_SECRET, { scopes: ["read"], ttlSeconds: 600 });
const writeOnly = await createToken(JWT_SECRET, { scopes: ["write"], ttlSeconds: 600 });
const CID_B = "bafkreidgvpkjawlxz6sffxzwgooowe5yt7i6wsyg236mfoks77nywkptdq";

beforeAll(() => {
  f = fixture();
  // This test never pays: a facilitator that is not there is enough.
  const down = async (): Promise<never> => {
    throw new FacilitatorUnavailableError("not used");
  };
  app = makeApp(f, { verify: down, settle: down, supported: down });
  for (let i = 0; i < 5; i++)
    createPaymentStore(f.db).markSettled(createPaymentStore(f.db).claim(claim({})).payment.id, `0x${"1".repeat(64)}`);
  createPaymentStore(f.db).markSettled(
    createPaymentStore(f.db).claim(
      claim({ cid: CID_B, amount: "500", payer: "0x3333333333333333333333333333333333333333" }),
    ).payment.id,
    "0x02",
  );
  createPaymentStore(f.db).markFailed(
    createPaymentStore(f.db).claim(claim({ cid: CID_B })).payment.id,
    "facilitator unreachable",
  );
});
afterAll(() => f.cleanup());

const get = (query: string, token: string | null = read) =>
  app.handle(
    new Request(`http://localhost/v3/x402/payments${query}`, {
      headers: token ? { Authorization: `Bearer ${token}` } : {},
    }),
  );

describe("GET /v3/x402/payments", () => {
  test("needs a token with the read scope", async () => {
    expect((await get("", null)).status).toBe(401);
    expect((await get("", writeOnly)).status).toBe(403);
  });

  test("lists newest first with totals of settled revenue", async () => {
    const res = await get("");
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as any;
    expect(data.payments).toHaveLength(7);
    expect(data.payments[0]).toMatchObject({
      id: 7,
      state: "failed",
      cid: CID_B,
      error: "facilitator unreachable",
      transaction: null,
    });
    expect(data.payments[6]).toMatchObject({
      id: 1,
      state: "settled",
      cid: CID_A,
      payer: PAYER,
      amount: "10000",
      amount_usd: "$0.01",
      network: "base-sepolia",
      payment_instruction_id: "0190a000-0000-7000-8000-000000000001",
      payment_instruction_version: 1,
      x402_version: 1,
    });
    expect(data.totals).toEqual([
      {
        network: "base-sepolia",
        asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
        amount: "50500",
        amount_usd: "$0.0505",
        count: 6,
      },
    ]);
    expect(data.next_page_token).toBeUndefined();
  });

  test("pages with limit and pageToken", async () => {
    const ids: number[] = [];
    let token = "";
    for (let i = 0; i < 10; i++) {
      const { data } = (await (await get(`?limit=3${token ? `&pageToken=${token}` : ""}`)).json()) as any;
      ids.push(...data.payments.map((p: { id: number }) => p.id));
      if (!data.next_page_token) break;
      token = data.next_page_token;
    }
    expect(ids).toEqual([7, 6, 5, 4, 3, 2, 1]);
  });

  test("filters: cid, payer, state, instruction, time; totals follow the filter", async () => {
    const byCid = (await (await get(`?cid=${CID_B}`)).json()) as any;
    expect(byCid.data.payments.map((p: { id: number }) => p.id)).toEqual([7, 6]);
    expect(byCid.data.totals).toEqual([
      {
        network: "base-sepolia",
        asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
        amount: "500",
        amount_usd: "$0.0005",
        count: 1,
      },
    ]);
    const byPayer = (await (await get("?payer=0x3333333333333333333333333333333333333333")).json()) as any;
    expect(byPayer.data.payments.map((p: { id: number }) => p.id)).toEqual([6]);
    const failed = (await (await get("?state=failed")).json()) as any;
    expect(failed.data.payments.map((p: { id: number }) => p.id)).toEqual([7]);
    const none = (await (await get("?payment_instruction_id=0190a000-0000-7000-8000-000000000999")).json()) as any;
    expect(none.data.payments).toEqual([]);
    const future = (await (await get("?from=2999-01-01T00:00:00Z")).json()) as any;
    expect(future.data.payments).toEqual([]);
    const past = (await (await get("?to=2999-01-01T00:00:00Z")).json()) as any;
    expect(past.data.payments).toHaveLength(7);
  });

  test("bad filters are 400 naming the field", async () => {
    for (const [q, field] of [
      ["?limit=0", "limit"],
      ["?pageToken=nope", "pageToken"],
      ["?cid=notacid", "cid"],
      ["?payer=0x12", "payer"],
      ["?state=paid", "state"],
      ["?from=yesterday", "from"],
    ]) {
      const res = await get(q);
      expect(res.status).toBe(400);
      const body = (await res.json()) as any;
      expect(JSON.stringify(body.error.details)).toContain(field);
    }
  });
});
