/**
 * The sales rollups (sales_hourly, sales_instruction_hourly, sales_totals,
 * kept by triggers on payments) agree with
 * the ledger after random inserts and state changes, whoever makes them: the
 * ledger store's claims and marks, and raw writes standing in for other
 * writers (a settled row reversed, failed rows pruned, a row's time moved).
 * Totals over random uneven ranges are compared with sums computed here
 * from the rows themselves. On both engines (PostgreSQL's triggers are the
 * PL/pgSQL twins, drizzle-pg/0002).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { openDb } from "../../src/db/client";
import { createPaymentStore, type Payment, type PaymentClaim, UNCONFIRMED } from "../../src/ledger/store";
import { createPgStatsQueries, createStatsQueries } from "../../src/stats/queries";
import { claim } from "../ledger/claims";
import { ENGINES, type EngineDb, openEngine } from "../support/engines";
import { pgAvailable } from "../support/postgres";
import { type EngineSql, engineSql } from "./engine-sql";

/** Deterministic: a failure replays. */
function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HOUR = 3_600_000;
const START = Date.parse("2026-01-01T00:00:00.000Z");
const INSTRUCTIONS = ["0190a000-0000-7000-8000-00000000000a", "0190a000-0000-7000-8000-00000000000b"];
const NETWORKS = ["base", "base-sepolia"];

/** What a rollup of these key columns must hold, computed from the rows themselves. */
function ledgerRollup(rows: Payment[], keyOf: (p: Payment) => string) {
  const out = new Map<string, { sales: number; amount: bigint }>();
  for (const p of rows) {
    if (p.state !== "settled") continue;
    const k = keyOf(p);
    const v = out.get(k) ?? { sales: 0, amount: 0n };
    v.sales++;
    v.amount += BigInt(p.amount);
    out.set(k, v);
  }
  return out;
}

/** The three rollups (schema.ts) and their keys, in SQL and from a row. */
const ROLLUPS = [
  {
    table: "sales_hourly",
    key: "hour || '|' || network || '|' || asset",
    of: (p: Payment) => `${p.createdAt.slice(0, 13)}|${p.network}|${p.asset}`,
  },
  {
    table: "sales_instruction_hourly",
    key: "instruction_id || '|' || hour || '|' || network || '|' || asset",
    of: (p: Payment) => `${p.instructionId}|${p.createdAt.slice(0, 13)}|${p.network}|${p.asset}`,
  },
  {
    table: "sales_totals",
    key: "instruction_id || '|' || network || '|' || asset",
    of: (p: Payment) => `${p.instructionId}|${p.network}|${p.asset}`,
  },
];

function ledgerTotals(rows: Payment[], from?: string, to?: string, instructionId?: string) {
  const out = new Map<string, { network: string; asset: string; amount: bigint; count: number }>();
  for (const p of rows) {
    if (p.state !== "settled") continue;
    if (from !== undefined && p.createdAt < from) continue;
    if (to !== undefined && p.createdAt >= to) continue;
    if (instructionId !== undefined && p.instructionId !== instructionId) continue;
    const k = `${p.network}|${p.asset}`;
    const v = out.get(k) ?? { network: p.network, asset: p.asset, amount: 0n, count: 0 };
    v.amount += BigInt(p.amount);
    v.count++;
    out.set(k, v);
  }
  return [...out.values()]
    .sort((a, b) => (a.network === b.network ? (a.asset < b.asset ? -1 : 1) : a.network < b.network ? -1 : 1))
    .map((v) => ({ ...v, amount: v.amount.toString() }));
}

/**
 * The ledger's writes the random walk makes: the SQLite payments store's own
 * (claims and marks) on SQLite; on PostgreSQL the same rows and transitions in
 * raw SQL (its payments store is not this folder's), which is all the
 * triggers see.
 */
interface LedgerWrites {
  claim(c: PaymentClaim): Promise<number | string>;
  markSettled(id: number | string, txHash: string): Promise<void>;
  markFailed(id: number | string, error: string): Promise<void>;
  markUnconfirmed(id: number | string, detail: string): Promise<void>;
  /** The store's totals (GET /v3/x402/payments): SQLite only here. */
  totals?: (f: { createdFrom?: string; createdTo?: string; instructionId?: string }) => unknown;
}

function ledgerWrites(e: EngineDb, sql: EngineSql): LedgerWrites {
  if (e.engine === "sqlite") {
    const store = createPaymentStore(e.sqlite);
    return {
      claim: async (c) => store.claim(c).payment.id,
      markSettled: async (id, tx) => void store.markSettled(Number(id), tx),
      markFailed: async (id, error) => void store.markFailed(Number(id), error),
      markUnconfirmed: async (id, detail) => void store.markUnconfirmed(Number(id), detail),
      totals: (f) => store.totals(f),
    };
  }
  const now = () => new Date().toISOString();
  return {
    async claim(c) {
      const [row] = await sql.all<{ id: string }>(
        `INSERT INTO payments (network, asset, payer, nonce, cid, instruction_id, instruction_version, amount, pay_to, state,
           valid_before, x402_version, proof_hash, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?) RETURNING id`,
        c.network,
        c.asset,
        c.payer,
        c.nonce,
        c.cid,
        c.instructionId,
        c.instructionVersion,
        c.amount,
        c.payTo,
        c.validBefore.toString(),
        c.x402Version,
        c.proofHash,
        now(),
        now(),
      );
      return row.id;
    },
    markSettled: (id, tx) =>
      sql.run(
        "UPDATE payments SET state = 'settled', tx_hash = ?, error = NULL, updated_at = ? WHERE id = ? AND state = 'pending'",
        tx,
        now(),
        id,
      ),
    markFailed: (id, error) =>
      sql.run(
        "UPDATE payments SET state = 'failed', error = ?, updated_at = ? WHERE id = ? AND state = 'pending'",
        error,
        now(),
        id,
      ),
    markUnconfirmed: (id, detail) =>
      sql.run(
        "UPDATE payments SET error = ?, updated_at = ? WHERE id = ? AND state = 'pending'",
        `${UNCONFIRMED}: ${detail}`,
        now(),
        id,
      ),
  };
}

const withPostgres = await pgAvailable("test/stats/rollup");
const engines = ENGINES.filter((e) => e !== "postgres" || withPostgres);

describe.each(engines)("the sales rollup agrees with the ledger on %s", (engine) => {
  let e: EngineDb;
  beforeEach(async () => {
    e = await openEngine(engine);
  }, 60_000); // the first PostgreSQL test of the process starts the server (initdb)
  afterEach(() => e.close());

  for (const seed of [1, 2, 3]) {
    test(`after random inserts and state changes (seed ${seed})`, async () => {
      const random = prng(seed);
      const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)];
      const sql = engineSql(e);
      const store = ledgerWrites(e, sql);
      const queries = e.engine === "sqlite" ? createStatsQueries(e.sqlite.sqlite) : createPgStatsQueries(e.pg);
      const all = async () => (await sql.all("SELECT * FROM payments")).map(camel);
      const isoAt = (ms: number) => new Date(ms).toISOString();
      const randomTime = () => isoAt(START + Math.floor(random() * 72 * HOUR));

      for (let step = 0; step < 1500; step++) {
        const rows = await sql.all<{ id: number | string; state: string }>("SELECT id, state FROM payments");
        const r = random();
        if (r < 0.35 || rows.length === 0) {
          const amount =
            random() < 0.03
              ? `${BigInt(2) ** BigInt(64) + BigInt(Math.floor(random() * 1000))}`
              : String(1 + Math.floor(random() * 2_000_000));
          const id = await store.claim(
            claim({ amount, instructionId: pick(INSTRUCTIONS), network: pick(NETWORKS), asset: pick(["0xA", "0xB"]) }),
          );
          // Spread creation over three days (the store stamps now).
          await sql.run("UPDATE payments SET created_at = ? WHERE id = ?", randomTime(), id);
        } else if (r < 0.6) {
          const row = pick(rows);
          await store.markSettled(row.id, `0x${step.toString(16)}`);
        } else if (r < 0.7) {
          await store.markFailed(pick(rows).id, "refused");
        } else if (r < 0.75) {
          await store.markUnconfirmed(pick(rows).id, "no answer");
        } else if (r < 0.8) {
          // Another writer reverses a sale (a reorg, a reconcile).
          await sql.run("UPDATE payments SET state = 'failed' WHERE id = ?", pick(rows).id);
        } else if (r < 0.85) {
          // Pruning of failed rows.
          await sql.run(
            "DELETE FROM payments WHERE id IN (SELECT id FROM payments WHERE state = 'failed' ORDER BY id LIMIT 3)",
          );
        } else if (r < 0.9) {
          // A settled row's time or amount corrected.
          await sql.run(
            "UPDATE payments SET created_at = ?, amount = ? WHERE id = ?",
            randomTime(),
            String(1 + Math.floor(random() * 500)),
            pick(rows).id,
          );
        } else if (r < 0.95) {
          // A transaction that fails after settling: rolled back, rollup included.
          const id = pick(rows).id;
          await expect(
            sql.rolledBack(async (run) => {
              await run("UPDATE payments SET state = 'settled' WHERE id = ?", id);
              throw new Error("rolled back");
            }),
          ).rejects.toThrow("rolled back");
        } else {
          // Settled straight away (an insert that is already settled).
          const c = claim({ instructionId: pick(INSTRUCTIONS), network: pick(NETWORKS) });
          await sql.run(
            `INSERT INTO payments (network, asset, payer, nonce, cid, instruction_id, instruction_version, amount, pay_to, state,
                 valid_before, x402_version, proof_hash, created_at, updated_at)
               VALUES (?, '0xA', ?, ?, ?, ?, 1, '777', '0x2', 'settled', 1, 1, 'h', ?, ?)`,
            c.network,
            c.payer,
            c.nonce,
            c.cid,
            c.instructionId,
            randomTime(),
            randomTime(),
          );
        }

        if (step % 100 === 99) {
          const rows = await all();
          for (const rollup of ROLLUPS) {
            const expected = ledgerRollup(rows, rollup.of);
            const held = await sql.all<{ k: string; sales: number; amount: number | string; oversized: number }>(
              `SELECT ${rollup.key} AS k, sales, amount, oversized FROM ${rollup.table} WHERE sales <> 0`,
            );
            expect(held.length).toBe(expected.size);
            for (const r of held) {
              const e = expected.get(r.k);
              expect(e?.sales).toBe(r.sales);
              // Oversized amounts are counted, not summed, by the rollup; reads then use the ledger.
              if (r.oversized === 0) expect(BigInt(r.amount)).toBe(e?.amount ?? -1n);
            }
          }
          // Totals over uneven ranges, either end open, one instruction or all.
          for (let i = 0; i < 20; i++) {
            const a = START - HOUR + Math.floor(random() * 75 * HOUR);
            const b = a + Math.floor(random() * 40 * HOUR);
            const from = random() < 0.2 ? undefined : isoAt(a);
            const to = random() < 0.2 ? undefined : isoAt(b);
            const instructionId = random() < 0.5 ? undefined : pick(INSTRUCTIONS);
            const expected = ledgerTotals(rows, from, to, instructionId);
            expect(await queries.paymentTotals({ from, to, instructionId })).toEqual(expected);
            if (store.totals)
              expect(store.totals({ createdFrom: from, createdTo: to, instructionId })).toEqual(expected);
          }
          // Hourly sales as the stats read them: the same figures per hour.
          const fromHour = isoAt(START + 10 * HOUR).slice(0, 13);
          const toHour = isoAt(START + 50 * HOUR).slice(0, 13);
          const instructionId = pick(INSTRUCTIONS);
          const sales = await queries.sales({ fromHour, toHour, instructionId });
          const byHour = new Map<string, bigint>();
          for (const s of sales) byHour.set(s.hour, (byHour.get(s.hour) ?? 0n) + BigInt(s.amount));
          const expectedByHour = new Map<string, bigint>();
          for (const p of rows)
            if (
              p.state === "settled" &&
              p.instructionId === instructionId &&
              p.createdAt.slice(0, 13) >= fromHour &&
              p.createdAt.slice(0, 13) < toHour
            )
              expectedByHour.set(
                p.createdAt.slice(0, 13),
                (expectedByHour.get(p.createdAt.slice(0, 13)) ?? 0n) + BigInt(p.amount),
              );
          expect(byHour).toEqual(expectedByHour);
        }
      }
    }, 120_000); // a bound for a stuck server, not a timing assertion: 1,500 round trips and more on PostgreSQL
  }
});

describe("the sales rollup on SQLite", () => {
  test("a migration onto a ledger with settled payments starts the rollup from them", () => {
    // The migration's backfill is the same statement as this check's expectation: run on a fresh copy.
    const db = openDb(":memory:");
    const store = createPaymentStore(db);
    for (let i = 0; i < 5; i++) store.markSettled(store.claim(claim({ amount: "100" })).payment.id, "0x01");
    for (const t of ["sales_hourly", "sales_instruction_hourly", "sales_totals"]) db.sqlite.exec(`DELETE FROM ${t}`);
    const backfill = Bun.file(new URL("../../drizzle/0006_stats.sql", import.meta.url)).text();
    return backfill.then((sql) => {
      db.sqlite.exec(sql.slice(sql.lastIndexOf("-- The payments settled before this migration.")));
      expect(store.totals({})).toEqual([{ network: "base-sepolia", asset: claim().asset, amount: "500", count: 5 }]);
      db.sqlite.close();
    });
  });
});

/** Raw rows as the store's camelCase type. */
function camel(r: Record<string, unknown>): Payment {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r)) out[k.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())] = v;
  return out as unknown as Payment;
}
