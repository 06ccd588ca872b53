/**
 * /v3/x402/entitlements through the whole app (app.handle, real SQLite):
 * list with filters and pages, grant by hand, revoke, and every refusal in
 * the one error shape.
 */
import { describe, expect, test } from "bun:test";
import { getAddress } from "viem";
import { CID_V0, CID_V1, makeHarness, PREFIX } from "../instructions/harness";

const URL = "/v3/x402/entitlements";
const PAYER = getAddress("0x5555555555555555555555555555555555555abc");
const OTHER = getAddress("0x6666666666666666666666666666666666666def");
/** CID_V1 written as CIDv1 in base58btc: the same CID, another spelling. */
const CID_V1_BASE58 = "zb2rhofyxeTby4Cfejapxts2LWrKxnWvpvpqwHCUm79G9p5Ca";
const now = () => Math.floor(Date.now() / 1000);

/** An app with one instruction holding CID_V1 (CID_V0 attached to nothing). */
async function setup() {
  const h = await makeHarness();
  const pi = await h.create();
  expect((await h.call("PUT", `${PREFIX}/${pi.id}/cids/${CID_V1}`)).status).toBe(200);
  return { ...h, pi };
}

describe("POST /v3/x402/entitlements", () => {
  test("grants a CID of the instruction: 201, the record, active", async () => {
    const h = await setup();
    const res = await h.call("POST", URL, {
      body: { payer: PAYER.toLowerCase(), payment_instruction_id: h.pi.id, cid: CID_V1_BASE58, note: "a gift" },
    });
    expect(res.status).toBe(201);
    expect(res.json.data).toMatchObject({
      payer: PAYER,
      scope: "cid",
      cid: CID_V1,
      payment_instruction_id: h.pi.id,
      source: "grant",
      payment_id: null,
      expires_at: null,
      revoked_at: null,
      note: "a gift",
      active: true,
    });
    expect(h.stores.entitlements.active(PAYER, CID_V1, h.pi.id, now())?.id).toBe(res.json.data.id);
  });

  test("without a CID it covers the instruction; expires_at is kept to the second", async () => {
    const h = await setup();
    const expires = new Date((now() + 3600) * 1000).toISOString();
    const res = await h.call("POST", URL, {
      body: { payer: PAYER, payment_instruction_id: h.pi.id.toUpperCase(), expires_at: expires },
    });
    expect(res.status).toBe(201);
    expect(res.json.data).toMatchObject({ scope: "instruction", cid: null, expires_at: expires, note: null });
    expect(res.json.data.payment_instruction_id).toBe(h.pi.id);
  });

  test("an unknown instruction is 404, a CID not attached to it 409; nothing written", async () => {
    const h = await setup();
    const unknown = await h.call("POST", URL, {
      body: { payer: PAYER, payment_instruction_id: "0190a000-0000-7000-8000-0000000000ff" },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe("not_found");
    const detached = await h.call("POST", URL, {
      body: { payer: PAYER, payment_instruction_id: h.pi.id, cid: CID_V0 },
    });
    expect(detached.status).toBe(409);
    expect(detached.json.error).toMatchObject({ code: "conflict" });
    expect(detached.json.error.message).toContain(CID_V0);
    expect(h.stores.entitlements.list({}, { limit: 10 }).items).toEqual([]);
  });

  test("bad fields are a 400 naming each, in the one error shape", async () => {
    const h = await setup();
    const cases: [Record<string, unknown>, string][] = [
      [{ payer: "0x12", payment_instruction_id: h.pi.id }, "payer"],
      [{ payer: PAYER }, "payment_instruction_id"],
      [{ payer: PAYER, payment_instruction_id: h.pi.id, cid: "not-a-cid" }, "cid"],
      [{ payer: PAYER, payment_instruction_id: h.pi.id, expires_at: "tomorrow" }, "expires_at"],
      [{ payer: PAYER, payment_instruction_id: h.pi.id, expires_at: "2001-01-01T00:00:00Z" }, "expires_at"],
      [{ payer: PAYER, payment_instruction_id: h.pi.id, note: "x".repeat(501) }, "note"],
    ];
    for (const [body, field] of cases) {
      const res = await h.call("POST", URL, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.code).toBe("invalid_request");
      expect(res.json.error.details.map((d: { path: string }) => d.path)).toContain(field);
      expect(res.text).not.toContain("/work");
    }
  });

  test("needs the write scope: 401 without a token, 403 with read only", async () => {
    const h = await setup();
    const body = { payer: PAYER, payment_instruction_id: h.pi.id };
    expect((await h.call("POST", URL, { body, token: null })).status).toBe(401);
    const res = await h.call("POST", URL, { body, token: h.tokens.read });
    expect(res.status).toBe(403);
    expect(res.json.error.code).toBeString();
  });
});

describe("DELETE /v3/x402/entitlements/:id", () => {
  test("revokes: the record with revoked_at, no longer active; twice keeps the first time", async () => {
    const h = await setup();
    const e = h.stores.entitlements.grant({ payer: PAYER, cid: CID_V1, instructionId: h.pi.id }, now() - 10);
    const res = await h.call("DELETE", `${URL}/${e.id}`);
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({ id: e.id, active: false });
    expect(res.json.data.revoked_at).toBeString();
    expect(h.stores.entitlements.active(PAYER, CID_V1, h.pi.id, now())).toBeUndefined();
    const again = await h.call("DELETE", `${URL}/${e.id}`);
    expect(again.json.data.revoked_at).toBe(res.json.data.revoked_at);
  });

  test("an unknown or malformed id is 404; the write scope is needed", async () => {
    const h = await setup();
    for (const id of ["999", "abc"]) {
      const res = await h.call("DELETE", `${URL}/${id}`);
      expect(res.status).toBe(404);
      expect(res.json.error.code).toBe("not_found");
    }
    const e = h.stores.entitlements.grant({ payer: PAYER, instructionId: h.pi.id }, now());
    expect((await h.call("DELETE", `${URL}/${e.id}`, { token: null })).status).toBe(401);
    expect((await h.call("DELETE", `${URL}/${e.id}`, { token: h.tokens.read })).status).toBe(403);
    expect(h.stores.entitlements.get(e.id)?.revokedAt).toBeNull();
  });
});

describe("GET /v3/x402/entitlements", () => {
  async function seeded() {
    const h = await setup();
    const t = now();
    const s = h.stores.entitlements;
    const a = s.grant({ payer: PAYER, cid: CID_V1, instructionId: h.pi.id }, t);
    const b = s.grant({ payer: OTHER, cid: CID_V1, instructionId: h.pi.id, expiresAt: t - 1 }, t - 100);
    const c = s.grant({ payer: PAYER, instructionId: h.pi.id, note: "all of it" }, t);
    const d = s.grant({ payer: OTHER, instructionId: "0190a000-0000-7000-8000-000000000077" }, t);
    s.revoke(d.id, t);
    return { ...h, ids: { a: a.id, b: b.id, c: c.id, d: d.id } };
  }
  const ids = (res: { json: any }) => res.json.data.entitlements.map((e: { id: number }) => e.id);

  test("newest first in the snake_case wire shape", async () => {
    const h = await seeded();
    const res = await h.call("GET", URL, { token: h.tokens.read });
    expect(res.status).toBe(200);
    expect(ids(res)).toEqual([h.ids.d, h.ids.c, h.ids.b, h.ids.a]);
    const expired = res.json.data.entitlements[2];
    expect(Object.keys(expired).sort()).toEqual(
      [
        "active",
        "cid",
        "expires_at",
        "granted_at",
        "id",
        "note",
        "payer",
        "payment_id",
        "payment_instruction_id",
        "revoked_at",
        "scope",
        "source",
      ].sort(),
    );
    expect(expired.active).toBe(false);
    expect(expired.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
    expect(res.json.data.next_page_token).toBeUndefined();
  });

  test("filters: payer (any case), cid (any spelling), payment_instruction_id, active", async () => {
    const h = await seeded();
    const q = async (query: string) => ids(await h.call("GET", `${URL}?${query}`));
    expect(await q(`payer=${PAYER.toLowerCase()}`)).toEqual([h.ids.c, h.ids.a]);
    expect(await q(`cid=${CID_V1_BASE58}`)).toEqual([h.ids.b, h.ids.a]);
    expect(await q(`payment_instruction_id=${h.pi.id.toUpperCase()}`)).toEqual([h.ids.c, h.ids.b, h.ids.a]);
    expect(await q("active=true")).toEqual([h.ids.c, h.ids.a]);
    expect(await q("active=false")).toEqual([h.ids.d, h.ids.b]);
    expect(await q(`active=true&payer=${OTHER}`)).toEqual([]);
  });

  test("pages with limit and pageToken", async () => {
    const h = await seeded();
    const first = await h.call("GET", `${URL}?limit=3`);
    expect(ids(first)).toEqual([h.ids.d, h.ids.c, h.ids.b]);
    const token = first.json.data.next_page_token;
    expect(token).toBeString();
    const second = await h.call("GET", `${URL}?limit=3&pageToken=${token}`);
    expect(ids(second)).toEqual([h.ids.a]);
    expect(second.json.data.next_page_token).toBeUndefined();
  });

  test("bad queries are 400 naming the field; read scope needed", async () => {
    const h = await seeded();
    for (const [query, field] of [
      ["limit=0", "limit"],
      ["limit=abc", "limit"],
      ["pageToken=nope", "pageToken"],
      ["cid=not-a-cid", "cid"],
      ["payer=0x1", "payer"],
      ["active=yes", "active"],
    ]) {
      const res = await h.call("GET", `${URL}?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.json.error.details.map((d: { path: string }) => d.path)).toContain(field);
    }
    expect((await h.call("GET", URL, { token: null })).status).toBe(401);
    expect((await h.call("GET", URL, { token: h.tokens.write })).status).toBe(403);
  });

  test("OpenAPI documents the three routes", async () => {
    const h = await setup();
    const res = await h.call("GET", "/openapi/json", { token: null });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json.paths[URL]).sort()).toEqual(["get", "post"]);
    expect(Object.keys(res.json.paths[`${URL}/{id}`])).toEqual(["delete"]);
  });
});
