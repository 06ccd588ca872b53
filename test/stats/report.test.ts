/**
 * GET /v3/x402/stats, /stats/breakdown and /metrics over either engine: the
 * same ledger rows and the same counts give the same answers, counts not yet
 * flushed included, numbers as numbers (the response schemas say integer:
 * PostgreSQL's sums would come back as strings if not converted).
 */
import { afterEach, beforeEach, describe, expect, setSystemTime, test } from "bun:test";
import { Elysia } from "elysia";
import { errors } from "../../src/http/errors";
import { createToken } from "../../src/http/token";
import { statsModule } from "../../src/stats/routes";
import { createStats, type Stats } from "../../src/stats/service";
import { ENGINES, type EngineDb, openEngine } from "../support/engines";
import { pgAvailable } from "../support/postgres";
import { type EngineSql, engineSql, statsDatabase } from "./engine-sql";

const SECRET = "stats-report-test-secret-0123456789abcdef";
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const A = "0190a000-0000-7000-8000-00000000000a";
const B = "0190a000-0000-7000-8000-00000000000b";
const X = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
const Y = "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi";
const RANGE = "from=2026-03-01T10:00:00.000Z&to=2026-03-01T12:00:00.000Z";

let nonce = 0;
/** A payment row as the ledger writes it (the rollups' triggers do the rest). */
function pay(sql: EngineSql, p: { cid: string; instruction: string; at: string; state: string; amount?: string }) {
  nonce++;
  return sql.run(
    `INSERT INTO payments (network, asset, payer, nonce, cid, instruction_id, instruction_version, amount, pay_to, state,
       valid_before, x402_version, proof_hash, created_at, updated_at)
     VALUES ('base-sepolia', ?, '0x1111111111111111111111111111111111111111', ?, ?, ?, 1, ?, '0x2222222222222222222222222222222222222222', ?,
       2000000000, 2, 'h', ?, ?)`,
    USDC,
    `0x${nonce.toString(16).padStart(64, "0")}`,
    p.cid,
    p.instruction,
    p.amount ?? "10000",
    p.state,
    p.at,
    p.at,
  );
}

const withPostgres = await pgAvailable("test/stats/report");
const engines = ENGINES.filter((e) => e !== "postgres" || withPostgres);

afterEach(() => setSystemTime());

describe.each(engines)("the stats report on %s", (engine) => {
  let e: EngineDb;
  let sql: EngineSql;
  let stats: Stats;
  let get: (path: string) => Promise<Response>;
  beforeEach(async () => {
    e = await openEngine(engine);
    sql = engineSql(e);
    stats = createStats(statsDatabase(e), {
      // A store read that awaits, as PostgreSQL's instruction store answers.
      instructionName: async (id) => ({ [A]: "Alpha", [B]: "Beta" })[id],
      pathsOf: () => new Map([[X, "films/x.mp4"]]),
    });
    const app = new Elysia().use(errors).use(statsModule({ stats, jwtSecret: SECRET }));
    const token = await createToken(SECRET, { scopes: ["read"], ttlSeconds: 3600 });
    get = (path) =>
      app.handle(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${token}` } }));

    await pay(sql, { cid: X, instruction: A, at: "2026-03-01T09:59:59.999Z", state: "settled" }); // before the range
    await pay(sql, { cid: X, instruction: A, at: "2026-03-01T10:05:00.000Z", state: "settled" });
    await pay(sql, { cid: X, instruction: A, at: "2026-03-01T11:30:00.000Z", state: "settled" });
    await pay(sql, { cid: Y, instruction: B, at: "2026-03-01T11:45:00.000Z", state: "settled", amount: "250000" });
    await pay(sql, { cid: Y, instruction: B, at: "2026-03-01T11:50:00.000Z", state: "pending" });
    await pay(sql, { cid: Y, instruction: B, at: "2026-03-01T11:55:00.000Z", state: "failed" });
    const x = { cid: X, instruction: { id: A } };
    const y = { cid: Y, instruction: { id: B } };
    setSystemTime(new Date("2026-03-01T10:30:00.000Z"));
    for (let i = 0; i < 4; i++) stats.counters.offer(x);
    stats.counters.proof(x);
    await stats.counters.flush();
    setSystemTime(new Date("2026-03-01T11:10:00.000Z"));
    stats.counters.offer(y);
    stats.counters.offer(y);
    stats.counters.offer(x); // these three are not flushed: the report adds them
    setSystemTime();
  }, 60_000); // the first PostgreSQL test of the process starts the server (initdb)
  afterEach(() => e.close());

  const revenue = (amount: string, usd: string, sales: number) => [
    { network: "base-sepolia", asset: USDC, amount, usd, sales },
  ];

  test("per hour and in total: sales and revenue from the ledger, offers and proofs flushed or not", async () => {
    const res = await get(`/v3/x402/stats?bucket=hour&${RANGE}`);
    expect(res.status).toBe(200);
    const { data } = await res.json();
    expect(data.buckets).toEqual([
      {
        start: "2026-03-01T10:00:00.000Z",
        offers: 4,
        proofs: 1,
        sales: 1,
        conversion: 0.25,
        revenue: revenue("10000", "0.01", 1),
      },
      {
        start: "2026-03-01T11:00:00.000Z",
        offers: 3,
        proofs: 0,
        sales: 2,
        conversion: 2 / 3,
        revenue: revenue("260000", "0.26", 2),
      },
    ]);
    expect(data.totals).toEqual({
      offers: 7,
      proofs: 1,
      sales: 3,
      conversion: 3 / 7,
      revenue: revenue("270000", "0.27", 3),
    });
  });

  test("one CID, one instruction: the ledger's and the instruction rollup's figures", async () => {
    const byCid = (await (await get(`/v3/x402/stats?bucket=hour&cid=${X}&${RANGE}`)).json()).data;
    expect(byCid.totals).toEqual({
      offers: 5,
      proofs: 1,
      sales: 2,
      conversion: 0.4,
      revenue: revenue("20000", "0.02", 2),
    });
    const byInstruction = (await (await get(`/v3/x402/stats?bucket=hour&instruction=${B}&${RANGE}`)).json()).data;
    expect(byInstruction.totals).toEqual({
      offers: 2,
      proofs: 0,
      sales: 1,
      conversion: 0.5,
      revenue: revenue("250000", "0.25", 1),
    });
  });

  test("the breakdown by instruction names each (an awaited read), most revenue first", async () => {
    const res = await get(`/v3/x402/stats/breakdown?by=instruction&bucket=hour&${RANGE}`);
    expect(res.status).toBe(200);
    const { data } = await res.json();
    expect(data.starts).toEqual(["2026-03-01T10:00:00.000Z", "2026-03-01T11:00:00.000Z"]);
    expect(data.rows).toEqual([
      {
        key: B,
        name: "Beta",
        series: [0, 1],
        offers: 2,
        proofs: 0,
        sales: 1,
        conversion: 0.5,
        revenue: revenue("250000", "0.25", 1),
      },
      {
        key: A,
        name: "Alpha",
        series: [1, 1],
        offers: 5,
        proofs: 1,
        sales: 2,
        conversion: 0.4,
        revenue: revenue("20000", "0.02", 2),
      },
    ]);
  });

  test("the breakdown by CID: series of the rows shown, paths, sorted and limited", async () => {
    const { data } = await (await get(`/v3/x402/stats/breakdown?by=cid&bucket=hour&sort=sales&${RANGE}`)).json();
    expect(data.rows.map((r: { key: string }) => r.key)).toEqual([X, Y]);
    expect(data.rows[0]).toMatchObject({ key: X, path: "films/x.mp4", series: [1, 1], sales: 2, offers: 5 });
    expect(data.rows[1]).toMatchObject({ key: Y, series: [0, 1], sales: 1, offers: 2 });
    expect(data.rows[1].path).toBeUndefined();
    const top = (await (await get(`/v3/x402/stats/breakdown?by=cid&sort=offers&limit=1&${RANGE}`)).json()).data;
    expect(top.rows).toHaveLength(1);
    expect(top.rows[0]).toMatchObject({ key: X, offers: 5 });
  });

  test("an amount past 64 bits is summed exactly (from the ledger, not the rollup)", async () => {
    await pay(sql, {
      cid: Y,
      instruction: B,
      at: "2026-03-01T11:20:00.000Z",
      state: "settled",
      amount: "18446744073709551616",
    });
    const { data } = await (await get(`/v3/x402/stats?bucket=hour&${RANGE}`)).json();
    expect(data.totals.revenue).toEqual(revenue("18446744073709821616", "18446744073709.821616", 4));
    expect(data.buckets[1].sales).toBe(3);
    const { data: byInstruction } = await (
      await get(`/v3/x402/stats/breakdown?by=instruction&bucket=hour&${RANGE}`)
    ).json();
    expect(byInstruction.rows[0]).toMatchObject({ key: B, sales: 2, series: [0, 2] });
    expect(byInstruction.rows[0].revenue[0].amount).toBe("18446744073709801616");
  });

  test("/metrics: the ledger's sales, revenue and pending payments, this process's counts", async () => {
    const res = await get("/metrics");
    expect(res.status).toBe(200);
    const text = await res.text();
    const labels = `{network="base-sepolia",asset="${USDC}"}`;
    expect(text).toContain(`cidgate_sales_total${labels} 4\n`);
    expect(text).toContain(`cidgate_revenue_base_units_total${labels} 280000\n`);
    expect(text).toContain("cidgate_pending_settlements 1\n");
    expect(text).toContain("cidgate_offers_total 7\n");
  });

  test("an empty range is a 400 naming `from`", async () => {
    const res = await get("/v3/x402/stats?bucket=hour&from=2026-03-01T12:00:00.000Z&to=2026-03-01T10:00:00.000Z");
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('"from"');
  });
});
