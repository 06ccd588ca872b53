/**
 * Offers and proofs are counted in memory and written every few seconds:
 * what a clean stop must not lose, and what an hour boundary must not blur.
 */
import { afterEach, describe, expect, setSystemTime, test } from "bun:test";
import { openDb } from "../../src/db/client";
import { FacilitatorUnavailableError } from "../../src/facilitator/types";
import { createLogger } from "../../src/http/logging";
import { startServer } from "../../src/server";
import { createFunnelCounters } from "../../src/stats/counters";
import { addContent, fixture, JWT_SECRET, price } from "../gateway/fixtures";

const item = (cid: string, id = "0190a000-0000-7000-8000-000000000001") => ({ cid, instruction: { id } });
const rows = (db: ReturnType<typeof openDb>) =>
  db.sqlite.query("SELECT cid, hour, offers, proofs FROM funnel_hourly ORDER BY hour, cid").all();
const totals = (db: ReturnType<typeof openDb>) =>
  db.sqlite.query("SELECT hour, instruction_id, offers, proofs FROM funnel_instruction_hourly ORDER BY hour").all();
const shop = (db: ReturnType<typeof openDb>) =>
  db.sqlite.query("SELECT hour, offers, proofs FROM funnel_shop_hourly ORDER BY hour").all();

afterEach(() => setSystemTime());

describe("funnel counters", () => {
  test("each count lands in the hour it happened, per CID and summed per instruction", () => {
    const db = openDb(":memory:");
    const counters = createFunnelCounters(db.sqlite);
    const a = item("bafya");
    const b = item("bafyb");
    setSystemTime(new Date("2026-03-01T10:59:59.900Z"));
    counters.offer(a);
    counters.offer(a);
    counters.proof(a);
    setSystemTime(new Date("2026-03-01T11:00:00.000Z"));
    counters.offer(a);
    counters.offer(b);
    // Not written yet, but readable (the stats add them).
    expect(rows(db)).toEqual([]);
    expect(counters.unflushed()).toHaveLength(3);
    counters.flush();
    counters.offer(b); // after a flush: added to the same row
    counters.flush();
    expect(rows(db)).toEqual([
      { cid: "bafya", hour: "2026-03-01T10", offers: 2, proofs: 1 },
      { cid: "bafya", hour: "2026-03-01T11", offers: 1, proofs: 0 },
      { cid: "bafyb", hour: "2026-03-01T11", offers: 2, proofs: 0 },
    ]);
    expect(totals(db)).toEqual([
      { hour: "2026-03-01T10", instruction_id: a.instruction.id, offers: 2, proofs: 1 },
      { hour: "2026-03-01T11", instruction_id: a.instruction.id, offers: 3, proofs: 0 },
    ]);
    expect(shop(db)).toEqual([
      { hour: "2026-03-01T10", offers: 2, proofs: 1 },
      { hour: "2026-03-01T11", offers: 3, proofs: 0 },
    ]);
    expect(counters.totals()).toEqual({ offers: 5, proofs: 1 });
    db.sqlite.close();
  });

  test("a flush that fails keeps its counts for the next one", () => {
    const db = openDb(":memory:");
    const counters = createFunnelCounters(db.sqlite);
    counters.offer(item("bafya"));
    db.sqlite.exec("ALTER TABLE funnel_shop_hourly RENAME TO away");
    expect(() => counters.flush()).toThrow();
    expect(rows(db)).toEqual([]); // rolled back, every table
    db.sqlite.exec("ALTER TABLE away RENAME TO funnel_shop_hourly");
    counters.offer(item("bafya"));
    counters.flush();
    expect(rows(db)).toMatchObject([{ cid: "bafya", offers: 2 }]);
    db.sqlite.close();
  });

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
      for (let i = 0; i < 3; i++) expect((await fetch(`${running.url}/x402/cid/${cid}`)).status).toBe(402);
      expect(rows(f.db)).toEqual([]); // the 5 s flush has not run
      await running.stop();
      expect(rows(f.db)).toMatchObject([{ cid, offers: 3, proofs: 0 }]);
    } finally {
      f.cleanup();
    }
  });
});
