/**
 * The payments' totals (GET /v3/x402/payments' `totals`) on both engines:
 * whole hours from the sales rollups, the uneven ends of a range from the
 * ledger (store.ts with stats/queries.ts on SQLite, totals-pg.ts on
 * PostgreSQL). Against a sum made here of the rows themselves, for ranges of
 * every shape: open ends, whole hours, within one hour, per instruction, with
 * amounts too long for the rollups, and filters only the ledger can answer.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { claim } from "./claims";
import { LEDGER_ENGINES, type Ledger, openLedger } from "./ledger-db";

const HOUR = 3_600_000;
const START = Date.parse("2026-05-01T00:00:00.000Z");
const INSTRUCTIONS = ["0190a000-0000-7000-8000-00000000000a", "0190a000-0000-7000-8000-00000000000b"];
const NETWORKS = ["base", "base-sepolia"];
const ASSETS = ["0x036CbD53842c5426634e7929541eC2318f3dCF7e", "0x3333333333333333333333333333333333333333"];
const PAYERS = ["0x1111111111111111111111111111111111111111", "0x4444444444444444444444444444444444444444"];

interface Row {
  network: string;
  asset: string;
  payer: string;
  cid: string;
  instructionId: string;
  amount: string;
  createdAt: string;
  settled: boolean;
}

describe.each(LEDGER_ENGINES)("%s", (engine) => {
  let ledger: Ledger;
  beforeEach(async () => {
    ledger = await openLedger(engine);
  }, 60_000); // the first one starts the test server
  afterEach(() => ledger.close());

  test("totals over any range equal the settled rows' own sums", async () => {
    let seed = 11;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];
    // A time in the three days, on a whole hour one time in four.
    const someTime = () => {
      const t = START - HOUR + Math.floor(random() * 75 * HOUR);
      return random() < 0.25 ? Math.floor(t / HOUR) * HOUR : t;
    };
    const rows: Row[] = [];
    for (let i = 0; i < 150; i++) {
      const row: Row = {
        network: pick(NETWORKS),
        asset: pick(ASSETS),
        payer: pick(PAYERS),
        cid: pick(["bafya", "bafyb"]),
        instructionId: pick(INSTRUCTIONS),
        // Two amounts too long for the rollups' sum (16 digits and more): reads that meet them sum the ledger.
        amount: i === 40 || i === 41 ? `${i}${"9".repeat(24)}` : String(1 + Math.floor(random() * 1_000_000)),
        createdAt: new Date(someTime()).toISOString(),
        settled: random() < 0.7,
      };
      const { payment } = await ledger.payments.claim(claim(row));
      // Its time before it settles: the rollups take a sale in at its created_at hour when it becomes settled.
      await ledger.raw("UPDATE payments SET created_at = ? WHERE id = ?", row.createdAt, payment.id);
      if (row.settled) await ledger.payments.markSettled(payment.id, "0x01");
      else if (random() < 0.5) await ledger.payments.markFailed(payment.id, "verify: insufficient_funds");
      rows.push(row);
    }

    const expected = (f: { from?: string; to?: string; instructionId?: string; cid?: string; payer?: string }) => {
      const sums = new Map<string, { network: string; asset: string; amount: bigint; count: number }>();
      for (const r of rows) {
        if (!r.settled || (f.from !== undefined && r.createdAt < f.from) || (f.to !== undefined && r.createdAt >= f.to))
          continue;
        if ((f.instructionId && r.instructionId !== f.instructionId) || (f.cid && r.cid !== f.cid)) continue;
        if (f.payer && r.payer !== f.payer) continue;
        const k = `${r.network}|${r.asset}`;
        const s = sums.get(k) ?? { network: r.network, asset: r.asset, amount: 0n, count: 0 };
        s.amount += BigInt(r.amount);
        s.count++;
        sums.set(k, s);
      }
      return [...sums.values()]
        .sort((x, y) => (x.network === y.network ? (x.asset < y.asset ? -1 : 1) : x.network < y.network ? -1 : 1))
        .map((s) => ({ ...s, amount: s.amount.toString() }));
    };

    let oversizedMet = 0;
    for (let k = 0; k < 60; k++) {
      const a = someTime();
      const b = a + Math.floor(random() * (random() < 0.2 ? HOUR : 40 * HOUR));
      const f = {
        from: random() < 0.2 ? undefined : new Date(a).toISOString(),
        to: random() < 0.2 ? undefined : new Date(b).toISOString(),
        instructionId: random() < 0.5 ? undefined : pick(INSTRUCTIONS),
        cid: random() < 0.15 ? pick(["bafya", "bafyb"]) : undefined,
        payer: random() < 0.15 ? pick(PAYERS) : undefined,
      };
      const want = expected(f);
      if (want.some((t) => t.amount.length > 16)) oversizedMet++;
      expect({ f, totals: await ledger.payments.totals({ createdFrom: f.from, createdTo: f.to, ...f }) }).toEqual({
        f,
        totals: want,
      });
    }
    expect(oversizedMet).toBeGreaterThan(0); // the ledger's fallback was exercised
    expect(await ledger.payments.totals({})).toEqual(expected({}));
  });
});
