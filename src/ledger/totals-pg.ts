/**
 * Settled revenue per network and asset on PostgreSQL: GET /v3/x402/payments'
 * `totals`, as the SQLite store answers it (store.ts `totals`, with
 * stats/queries.ts `paymentTotals`): whole hours from the sales rollups
 * (kept by the triggers of drizzle-pg/0002), the uneven ends of a time range
 * from the ledger, so the answer is exact for any bounds.
 *
 * PostgreSQL sums `numeric`, which has no 64-bit ceiling: the ledger's sums
 * are exact in SQL, with no BigInt pass in JS. Only the rollups' `amount`
 * leaves out amounts of 16 digits or more (counted in `oversized`); a range
 * that meets one is summed from the ledger instead, as on SQLite.
 */
import { type SQL, sql } from "drizzle-orm";
import type { PgExecutor } from "../db/pg";
import { hourKey } from "../stats/buckets";

export interface Total {
  network: string;
  asset: string;
  /** The exact decimal sum, smallest unit. */
  amount: string;
  count: number;
}

const HOUR = 3_600_000;

/** A row of a totals query. Bun's client hands bigint and numeric results over as strings. */
interface Row {
  network: string;
  asset: string;
  amount: string | null;
  count: string | number;
  oversized?: string | number;
}

/** Counts as numbers, as SQLite gives them; groups that fell to no sales left out. */
const totalsOf = (rows: Row[]) =>
  rows
    .map((r) => ({ network: r.network, asset: r.asset, amount: r.amount ?? "0", count: Number(r.count) }))
    .filter((t) => t.count !== 0);

/** Settled payments matching `where` (conditions on `payments`, state included), summed from the ledger. */
export async function ledgerTotals(q: PgExecutor, where: SQL): Promise<Total[]> {
  const rows = await q.execute(
    sql`SELECT network, asset, sum(amount::numeric)::text AS amount, count(*) AS count
        FROM payments WHERE ${where} GROUP BY network, asset ORDER BY network, asset`,
  );
  return totalsOf(rows as Row[]);
}

/** ISO bounds of created_at, either open, as conditions. */
function createdBetween(from: string | undefined, to: string | undefined): SQL {
  const parts: SQL[] = [sql`state = 'settled'`];
  if (from !== undefined) parts.push(sql`created_at >= ${from}`);
  if (to !== undefined) parts.push(sql`created_at < ${to}`);
  return sql.join(parts, sql` AND `);
}

/**
 * Totals of payments created in [from, to) (ISO times, either open), optionally under one
 * instruction: one statement adds the rollup's whole hours (or its all-time row) and the ledger's
 * rows at the uneven ends.
 */
export async function rollupTotals(
  q: PgExecutor,
  f: { from?: string; to?: string; instructionId?: string },
): Promise<Total[]> {
  const instruction = f.instructionId === undefined ? sql`TRUE` : sql`instruction_id = ${f.instructionId}`;
  const ledgerOnly = () => ledgerTotals(q, sql`${createdBetween(f.from, f.to)} AND ${instruction}`);
  const fromMs = f.from === undefined ? undefined : Date.parse(f.from);
  const toMs = f.to === undefined ? undefined : Date.parse(f.to);
  // Whole hours: [the first hour starting at or after `from`, the last hour starting at or before `to`).
  const wholeFrom = fromMs === undefined ? undefined : Math.ceil(fromMs / HOUR) * HOUR;
  const wholeTo = toMs === undefined ? undefined : Math.floor(toMs / HOUR) * HOUR;
  if (wholeFrom !== undefined && wholeTo !== undefined && wholeFrom >= wholeTo) return ledgerOnly(); // within an hour

  let rollup: SQL;
  const edges: SQL[] = [];
  if (wholeFrom === undefined && wholeTo === undefined) {
    // All time: the all-time rollup, a row per instruction, network and asset.
    rollup = sql`SELECT network, asset, sales, amount, oversized FROM sales_totals WHERE ${instruction}`;
  } else {
    const hours: SQL[] = [instruction];
    if (wholeFrom !== undefined) {
      hours.push(sql`hour >= ${hourKey(wholeFrom)}`);
      if (wholeFrom !== fromMs) edges.push(createdBetween(f.from, new Date(wholeFrom).toISOString()));
    }
    if (wholeTo !== undefined) {
      hours.push(sql`hour < ${hourKey(wholeTo)}`);
      if (wholeTo !== toMs) edges.push(createdBetween(new Date(wholeTo).toISOString(), f.to));
    }
    const table = f.instructionId === undefined ? sql`sales_hourly` : sql`sales_instruction_hourly`;
    rollup = sql`SELECT network, asset, sales, amount, oversized FROM ${table} WHERE ${sql.join(hours, sql` AND `)}`;
  }
  const ledger = edges.length
    ? sql`UNION ALL SELECT network, asset, 1, amount::numeric, 0 FROM payments
          WHERE (${sql.join(edges, sql` OR `)}) AND ${instruction}`
    : sql``;
  const rows = (await q.execute(
    sql`SELECT network, asset, sum(amount)::text AS amount, sum(sales) AS count, sum(oversized) AS oversized
        FROM (${rollup} ${ledger}) parts GROUP BY network, asset ORDER BY network, asset`,
  )) as Row[];
  // An amount too long for the rollup's sum in the range: the ledger's exact sum of all of it instead.
  if (rows.some((r) => Number(r.oversized) > 0)) return ledgerOnly();
  return totalsOf(rows);
}
