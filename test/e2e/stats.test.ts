/**
 * The shop's figures after real purchases on the devnet (stack.ts: anvil,
 * the built-in facilitator settling on it, the production server): offers
 * shown, proofs presented, sales, conversion and revenue per CID, per
 * instruction and in total, from GET /v3/x402/stats, /stats/breakdown,
 * GET /v3/x402/payments' totals and /metrics, which must all agree.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Buyer, createMarket, type Market, PRICE } from "./market";

let m: Market;
let buyers: Buyer[];

// What this test does to the shop, and so what the figures must say.
const EXPECTED = {
  a: { offers: 2 + 2, proofs: 2, sales: 2 }, // two looks, then two buyers (each client asks first)
  b: { offers: 1, proofs: 1, sales: 0 }, // one look, one unreadable proof
};

beforeAll(async () => {
  m = await createMarket({ files: ["a.txt", "b.txt", "c.txt"], buyers: 2 });
  buyers = [m.buyer(), m.buyer()];
  // Two looks at a.txt, one at b.txt; a HEAD is not counted (it never shows a buyer an offer to pay).
  expect((await m.get("a.txt")).res.status).toBe(402);
  expect((await m.get("a.txt")).res.status).toBe(402);
  expect((await m.get("b.txt")).res.status).toBe(402);
  expect((await fetch(m.url("a.txt"), { method: "HEAD" })).status).toBe(402);
  // Two sales of a.txt with the real clients: v1 (x402-fetch) and v2 (@x402/fetch).
  expect((await (await m.x402Fetch(buyers[0]))(m.url("a.txt"))).status).toBe(200);
  expect((await m.v2Fetch(buyers[1])(m.url("a.txt"))).status).toBe(200);
  // A proof for b.txt that cannot be read: presented, refused, no sale.
  expect((await m.get("b.txt", { "X-PAYMENT": "not-a-proof" })).res.status).toBe(403);
}, 60_000);
afterAll(() => m?.stop());

const usdOf = (n: bigint) =>
  `${n / 1_000_000n}.${(n % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "").padEnd(2, "0")}`;

describe("GET /v3/x402/stats after purchases on the devnet", () => {
  test("the whole shop: offers, proofs, sales, conversion and revenue in base units and dollars", async () => {
    const { status, body } = await m.api("GET", "/v3/x402/stats?bucket=hour", undefined, ["read"]);
    expect(status).toBe(200);
    const offers = EXPECTED.a.offers + EXPECTED.b.offers;
    const proofs = EXPECTED.a.proofs + EXPECTED.b.proofs;
    expect(body.data.totals).toEqual({
      offers,
      proofs,
      sales: 2,
      conversion: 2 / offers,
      revenue: [
        {
          network: "base-sepolia",
          asset: m.stack.devnet.token,
          amount: (2n * PRICE).toString(),
          usd: usdOf(2n * PRICE),
          sales: 2,
        },
      ],
    });
    // The buckets hold the same sums (the default range is the last 48 hours, by the hour).
    const buckets = body.data.buckets as { offers: number; sales: number; revenue: { amount: string }[] }[];
    expect(buckets.length).toBeGreaterThanOrEqual(48);
    expect(buckets.reduce((s, b) => s + b.offers, 0)).toBe(offers);
    expect(buckets.reduce((s, b) => s + b.sales, 0)).toBe(2);
    expect(buckets.flatMap((b) => b.revenue).reduce((s, r) => s + BigInt(r.amount), 0n)).toBe(2n * PRICE);
    // Days, weeks and months are summed from days in SQL, hours from hours: the same totals.
    for (const bucket of ["day", "week", "month"]) {
      const other = await m.api("GET", `/v3/x402/stats?bucket=${bucket}`, undefined, ["read"]);
      expect(other.body.data.totals).toEqual(body.data.totals);
    }
    // The same totals as the ledger's own revenue figure.
    const payments = await m.api("GET", "/v3/x402/payments", undefined, ["read"]);
    expect(payments.body.data.totals).toEqual([
      {
        network: "base-sepolia",
        asset: m.stack.devnet.token,
        amount: (2n * PRICE).toString(),
        amount_usd: `$${(Number(2n * PRICE) / 1e6).toFixed(2)}`,
        count: 2,
      },
    ]);
  });

  test("the funnel per CID: offers -> proofs -> sales -> conversion", async () => {
    for (const [file, e] of Object.entries(EXPECTED)) {
      const { body } = await m.api("GET", `/v3/x402/stats?bucket=day&cid=${m.stack.cids[`${file}.txt`]}`, undefined, [
        "read",
      ]);
      const t = body.data.totals;
      expect({ offers: t.offers, proofs: t.proofs, sales: t.sales }).toEqual(e);
      expect(t.conversion).toBe(e.sales / e.offers);
    }
    // A file nobody looked at: no offers, so no conversion.
    const c = await m.api("GET", `/v3/x402/stats?cid=${m.stack.cids["c.txt"]}`, undefined, ["read"]);
    expect(c.body.data.totals).toEqual({ offers: 0, proofs: 0, sales: 0, conversion: null, revenue: [] });
  });

  test("the breakdown table per CID and per instruction, with a sales series per row", async () => {
    const byCid = await m.api("GET", "/v3/x402/stats/breakdown?by=cid&bucket=day", undefined, ["read"]);
    expect(byCid.status).toBe(200);
    const rows = byCid.body.data.rows as {
      key: string;
      path?: string;
      offers: number;
      sales: number;
      series: number[];
    }[];
    // Most revenue first: a.txt, then b.txt (looked at, never bought).
    expect(rows.map((r) => r.key)).toEqual([m.stack.cids["a.txt"], m.stack.cids["b.txt"]]);
    expect(rows[0]).toMatchObject({ path: "a.txt", offers: EXPECTED.a.offers, sales: 2 });
    expect(rows[0].series.reduce((s, n) => s + n, 0)).toBe(2);
    expect(rows[0].series.length).toBe(byCid.body.data.starts.length);
    const byOffers = await m.api("GET", "/v3/x402/stats/breakdown?by=cid&sort=proofs&limit=1", undefined, ["read"]);
    expect(byOffers.body.data.rows.map((r: { key: string }) => r.key)).toEqual([m.stack.cids["a.txt"]]);

    const byInstruction = await m.api("GET", "/v3/x402/stats/breakdown?by=instruction", undefined, ["read"]);
    expect(byInstruction.body.data.rows).toHaveLength(1);
    expect(byInstruction.body.data.rows[0]).toMatchObject({
      key: m.stack.instruction.id,
      name: "Access fee",
      offers: EXPECTED.a.offers + EXPECTED.b.offers,
      sales: 2,
    });
    // The instruction filter: the same figures as the whole shop (one instruction sells everything here).
    const one = await m.api("GET", `/v3/x402/stats?instruction=${m.stack.instruction.id}`, undefined, ["read"]);
    expect(one.body.data.totals.sales).toBe(2);
    const other = await m.api("GET", "/v3/x402/stats?instruction=0190a000-0000-7000-8000-00000000dead", undefined, [
      "read",
    ]);
    expect(other.body.data.totals).toMatchObject({ offers: 0, sales: 0, revenue: [] });
  });

  test("the counts survive the flush to SQLite unchanged", async () => {
    const before = (await m.api("GET", "/v3/x402/stats", undefined, ["read"])).body.data.totals;
    expect(m.stack.stats.counters.flush()).toBeGreaterThan(0);
    expect(m.stack.stats.counters.unflushed()).toEqual([]);
    const after = (await m.api("GET", "/v3/x402/stats", undefined, ["read"])).body.data.totals;
    expect(after).toEqual(before);
  });

  test("bad input: one JSON error naming the field, nothing answered", async () => {
    for (const [query, path] of [
      ["bucket=year", "bucket"],
      ["from=yesterday", "from"],
      ["cid=not-a-cid", "cid"],
      ["bucket=hour&from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from"],
      ["from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from"],
    ]) {
      const { status, body } = await m.api("GET", `/v3/x402/stats?${query}`, undefined, ["read"]);
      expect(status).toBe(400);
      expect(JSON.stringify(body.error)).toContain(path);
    }
    expect((await fetch(`${m.stack.url}/v3/x402/stats`)).status).toBe(401);
  });
});

describe("GET /metrics", () => {
  test("needs a read token", async () => {
    expect((await fetch(`${m.stack.url}/metrics`)).status).toBe(401);
    expect((await m.api("GET", "/metrics", undefined, ["write"])).status).toBe(403);
  });

  test("Prometheus text: requests, offers, proofs by outcome, facilitator latencies, revenue, pending", async () => {
    const { createToken } = await import("../../src/http/token");
    const { STACK_JWT_SECRET } = await import("./stack");
    const token = await createToken(STACK_JWT_SECRET, { scopes: ["read"], ttlSeconds: 60 });
    const res = await fetch(`${m.stack.url}/metrics`, { headers: { Authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    const value = (series: string) => {
      const line = text.split("\n").find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    expect(value("cidgate_offers_total")).toBe(EXPECTED.a.offers + EXPECTED.b.offers);
    expect(value('cidgate_proofs_total{outcome="settled"}')).toBe(2);
    expect(value('cidgate_proofs_total{outcome="refused"}')).toBe(1);
    expect(value('cidgate_http_requests_total{route="/x402/cid/:cid",status="402"}')).toBe(
      EXPECTED.a.offers + EXPECTED.b.offers + 1, // and the HEAD
    );
    expect(value('cidgate_http_requests_total{route="/x402/cid/:cid",status="200"}')).toBe(2);
    expect(value('cidgate_facilitator_duration_seconds_count{call="verify",result="ok"}')).toBe(2);
    expect(value('cidgate_facilitator_duration_seconds_count{call="settle",result="ok"}')).toBe(2);
    expect(text).toContain("cidgate_facilitator_errors_total");
    expect(value(`cidgate_revenue_base_units_total{network="base-sepolia",asset="${m.stack.devnet.token}"}`)).toBe(
      Number(2n * PRICE),
    );
    expect(value(`cidgate_sales_total{network="base-sepolia",asset="${m.stack.devnet.token}"}`)).toBe(2);
    expect(value("cidgate_pending_settlements")).toBe(0);
  });
});
