/**
 * Offers and proofs are counted in memory and written every few seconds:
 * what a clean stop must not lose, and what an hour boundary must not blur.
 * On either engine; on PostgreSQL also what several replicas flushing into
 * one hour must add up to.
 */
import { afterEach, beforeEach, describe, expect, setSystemTime, test } from "bun:test";
import { openPg } from "../../src/db/pg";
import { FacilitatorUnavailableError } from "../../src/facilitator/types";
import { createLogger } from "../../src/http/logging";
import { startServer } from "../../src/server";
import { createFunnelCounters } from "../../src/stats/counters";
import { createPgFunnelCounters } from "../../src/stats/counters-pg";
import { createStats } from "../../src/stats/service";
import { addContent, fixture, JWT_SECRET, price } from "../gateway/fixtures";
import { ENGINES, type EngineDb, openEngine } from "../support/engines";
import { pgAvailable } from "../support/postgres";
import { type EngineSql, engineSql, statsDatabase } from "./engine-sql";

const item = (cid: string, id = "0190a000-0000-7000-8000-000000000001") => ({ cid, instruction: { id } });
const rows = (sql: EngineSql) => sql.all("SELECT cid, hour, offers, proofs FROM funnel_hourly ORDER BY hour, cid");
const totals = (sql: EngineSql) =>
  sql.all("SELECT hour, instruction_id, offers, proofs FROM funnel_instruction_hourly ORDER BY hour");
const shop = (sql: EngineSql) => sql.all("SELECT hour, offers, proofs FROM funnel_shop_hourly ORDER BY hour");

const withPostgres = await pgAvailable("test/stats/counters");
const engines = ENGINES.filter((e) => e !== "postgres" || withPostgres);

afterEach(() => setSystemTime());

describe.each(engines)("funnel counters on %s", (engine) => {
  let e: EngineDb;
  let sql: EngineSql;
  beforeEach(async () => {
    e = await openEngine(engine);
    sql = engineSql(e);
  });
  afterEach(() => e.close());
  const counters = () => (e.engine === "sqlite" ? createFunnelCounters(e.sqlite.sqlite) : createPgFunnelCounters(e.pg));

  test("each count lands in the hour it happened, per CID and summed per instruction", async () => {
    const c = counters();
    const a = item("bafya");
    const b = item("bafyb");
    setSystemTime(new Date("2026-03-01T10:59:59.900Z"));
    c.offer(a);
    c.offer(a);
    c.proof(a);
    setSystemTime(new Date("2026-03-01T11:00:00.000Z"));
    c.offer(a);
    c.offer(b);
    // Not written yet, but readable (the stats add them).
    expect(await rows(sql)).toEqual([]);
    expect(c.unflushed()).toHaveLength(3);
    await c.flush();
    c.offer(b); // after a flush: added to the same row
    await c.flush();
    expect(await rows(sql)).toEqual([
      { cid: "bafya", hour: "2026-03-01T10", offers: 2, proofs: 1 },
      { cid: "bafya", hour: "2026-03-01T11", offers: 1, proofs: 0 },
      { cid: "bafyb", hour: "2026-03-01T11", offers: 2, proofs: 0 },
    ]);
    expect(await totals(sql)).toEqual([
      { hour: "2026-03-01T10", instruction_id: a.instruction.id, offers: 2, proofs: 1 },
      { hour: "2026-03-01T11", instruction_id: a.instruction.id, offers: 3, proofs: 0 },
    ]);
    expect(await shop(sql)).toEqual([
      { hour: "2026-03-01T10", offers: 2, proofs: 1 },
      { hour: "2026-03-01T11", offers: 3, proofs: 0 },
    ]);
    expect(c.totals()).toEqual({ offers: 5, proofs: 1 });
  });

  test("a flush that fails keeps its counts for the next one", async () => {
    const c = counters();
    c.offer(item("bafya"));
    await sql.run("ALTER TABLE funnel_shop_hourly RENAME TO away");
    // The shop's grain is written last: the per-CID rows written before it are rolled back too.
    expect(async () => await c.flush()).toThrow();
    expect(await rows(sql)).toEqual([]); // rolled back, every table
    expect(c.unflushed()).toMatchObject([{ cid: "bafya", offers: 1 }]); // still counted, still reported
    await sql.run("ALTER TABLE away RENAME TO funnel_shop_hourly");
    c.offer(item("bafya"));
    await c.flush();
    expect(await rows(sql)).toMatchObject([{ cid: "bafya", offers: 2 }]);
    expect(await shop(sql)).toMatchObject([{ offers: 2 }]);
  });

  test("a flush of more CIDs than one statement takes writes them all", async () => {
    // PostgreSQL takes at most 65,535 parameters a statement: 14,000 rows of five (70,000) are written in parts.
    const c = counters();
    setSystemTime(new Date("2026-03-01T10:15:00.000Z"));
    for (let i = 0; i < 14_000; i++) c.offer(item(`bafy${i}`));
    expect(await c.flush()).toBe(14_000);
    const [written] = await sql.all<{ n: unknown; offers: unknown }>(
      "SELECT count(*) AS n, sum(offers) AS offers FROM funnel_hourly",
    );
    expect([Number(written.n), Number(written.offers)]).toEqual([14_000, 14_000]); // PostgreSQL's bigint: text
    expect(await shop(sql)).toEqual([{ hour: "2026-03-01T10", offers: 14_000, proofs: 0 }]);
  }, 60_000); // a bound for a stuck server, not a timing assertion

  test("the stats' stop writes the counts gathered since the last flush", async () => {
    const stats = createStats(statsDatabase(e), { flushIntervalMs: 3_600_000 });
    stats.start();
    for (let i = 0; i < 3; i++) stats.counters.offer(item("bafya"));
    stats.counters.proof(item("bafya"));
    expect(await rows(sql)).toEqual([]); // the interval has not passed
    await stats.stop();
    expect(await rows(sql)).toMatchObject([{ cid: "bafya", offers: 3, proofs: 1 }]);
    expect(stats.counters.unflushed()).toEqual([]);
  });
});

describe.skipIf(!withPostgres)("funnel counters of several replicas on one PostgreSQL", () => {
  let e: EngineDb;
  beforeEach(async () => {
    e = await openEngine("postgres");
  }, 60_000);
  afterEach(() => e.close());

  test("two replicas flushing counts of the same hour and CID add up, at every grain", async () => {
    if (e.engine !== "postgres") throw new Error("postgres expected");
    // A second replica: its own pool (own connections, own counters) on the same database.
    const other = await openPg(e.url);
    try {
      const sql = engineSql(e);
      const one = createPgFunnelCounters(e.pg);
      const two = createPgFunnelCounters(other);
      const a = item("bafya");
      const b = item("bafyb", "0190a000-0000-7000-8000-000000000002");
      setSystemTime(new Date("2026-03-01T10:15:00.000Z"));
      // Rounds of counting on both, each round flushed by both at once (their transactions overlap).
      for (let round = 0; round < 20; round++) {
        for (let i = 0; i < 3; i++) one.offer(a);
        one.proof(a);
        for (let i = 0; i < 5; i++) two.offer(a);
        two.offer(b);
        two.proof(b);
        await Promise.all([one.flush(), two.flush()]);
      }
      expect(await rows(sql)).toEqual([
        { cid: "bafya", hour: "2026-03-01T10", offers: 160, proofs: 20 },
        { cid: "bafyb", hour: "2026-03-01T10", offers: 20, proofs: 20 },
      ]);
      expect(
        await sql.all("SELECT instruction_id, hour, offers, proofs FROM funnel_instruction_hourly ORDER BY 1"),
      ).toEqual([
        { instruction_id: a.instruction.id, hour: "2026-03-01T10", offers: 160, proofs: 20 },
        { instruction_id: b.instruction.id, hour: "2026-03-01T10", offers: 20, proofs: 20 },
      ]);
      expect(await shop(sql)).toEqual([{ hour: "2026-03-01T10", offers: 180, proofs: 40 }]);
      // Each replica's own /metrics totals are its own counts.
      expect(one.totals()).toEqual({ offers: 60, proofs: 20 });
      expect(two.totals()).toEqual({ offers: 120, proofs: 20 });
    } finally {
      await other.close();
    }
  });

  test("counts made while a flush awaits its commit go to the next flush, and stay reported meanwhile", async () => {
    if (e.engine !== "postgres") throw new Error("postgres expected");
    const sql = engineSql(e);
    const c = createPgFunnelCounters(e.pg);
    const a = item("bafya");
    setSystemTime(new Date("2026-03-01T10:15:00.000Z"));
    c.offer(a);
    const first = c.flush(); // under way: its rows taken
    c.offer(a);
    c.offer(a);
    expect(c.unflushed()).toMatchObject([{ cid: "bafya", offers: 3 }]); // in flight + new: none missed
    const second = c.flush(); // waits for the first
    expect(await first).toBe(1);
    expect(await second).toBe(1);
    expect(await rows(sql)).toEqual([{ cid: "bafya", hour: "2026-03-01T10", offers: 3, proofs: 0 }]);
    expect(c.unflushed()).toEqual([]);
  });
});

describe("funnel counters in the server (SQLite)", () => {
  test("a clean server stop writes the counts gathered since the last flush", async () => {
    const f = fixture();
    try {
      const { "a.txt": cid } = await addContent(f, { "a.txt": "paid words" });
      price(f, cid, [{ payTo: "0x2222222222222222222222222222222222222222", amount: "10000" }]);
      const down = async (): Promise<never> => {
        throw new FacilitatorUnavailableError("not used");
      };
      const running = await startServer({
        settings: { ...f.settings, host: "127.0.0.1", port: 0 },
        db: f.db,
        stores: f.stores,
        log: createLogger("silent"),
        jwtSecret: JWT_SECRET,
        facilitator: { verify: down, settle: down, supported: down },
        pricing: false,
      });
      const sql = engineSql({ engine: "sqlite", sqlite: f.db, close: async () => {} });
      for (let i = 0; i < 3; i++) expect((await fetch(`${running.url}/x402/cid/${cid}`)).status).toBe(402);
      expect(await rows(sql)).toEqual([]); // the 5 s flush has not run
      await running.stop();
      expect(await rows(sql)).toMatchObject([{ cid, offers: 3, proofs: 0 }]);
    } finally {
      f.cleanup();
    }
  });
});
