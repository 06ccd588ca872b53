/**
 * The statistics' reads, as raw prepared statements (bun:sqlite caches each
 * SQL text): the rollups (sales_*, funnel_*; schema.ts says which grain
 * answers what) for whole hours, the payments table for one CID's sales and for the
 * uneven edges of a time range. Nothing here writes.
 *
 * Amounts are summed by SQLite as 64-bit integers and read as text: exact,
 * and past JS's 2^53.
 */
import type { Database } from "bun:sqlite";
import { hourKey } from "./buckets";

export interface SalesRow {
  hour: string;
  /** The CID or instruction of a breakdown row; "" otherwise. */
  key: string;
  network: string;
  asset: string;
  sales: number;
  amount: string;
}

export interface FunnelHourRow {
  hour: string;
  key: string;
  offers: number;
  proofs: number;
}

/** Hours [fromHour, toHour) ("YYYY-MM-DDTHH"), and what to keep. */
export interface HourRange {
  fromHour: string;
  toHour: string;
  cid?: string;
  instructionId?: string;
}

const HOUR = 3_600_000;

/**
 * How finely rows come back: per hour, per day (keyed by the day's first hour: every bucket but
 * the hour starts on a day, so a day falls in one bucket; ~24x fewer rows for a year), or one per
 * key over the whole range (keyed by its first hour).
 */
export type Grain = "hour" | "day" | "range";

/** The hour-key expression of a grain over a column holding an hour key or an ISO time. */
const grainOf = (grain: Grain, column: string) =>
  grain === "hour" ? `substr(${column}, 1, 13)` : grain === "day" ? `substr(${column}, 1, 10) || 'T00'` : "$from";

/**
 * Settled amounts summed from the ledger, exactly: amounts of up to 15 digits
 * by SQLite, longer ones (never a real price) listed and added as BigInts.
 */
const LEDGER_AMOUNT = `cast(sum(CASE WHEN length(amount) <= 15 THEN cast(amount AS integer) ELSE 0 END) AS text) AS amount,
  group_concat(CASE WHEN length(amount) > 15 THEN amount END) AS big`;

function exact<R extends { amount: string; big?: string | null }>(rows: R[]): R[] {
  for (const r of rows) {
    if (r.big)
      r.amount = r.big
        .split(",")
        .reduce((sum, a) => sum + BigInt(a), BigInt(r.amount ?? "0"))
        .toString();
    delete r.big;
  }
  return rows;
}

export function createStatsQueries(sqlite: Database) {
  const q = <R>(text: string) => sqlite.query<R, Record<string, string>>(text);

  /**
   * Settled sales per hour (and per `by`) over a range: the shop's or an
   * instruction's rollup, or the payments of one CID (or of every CID, by=cid).
   */
  function sales(
    range: HourRange,
    by: "none" | "cid" | "instruction" = "none",
    /** "range": one row per key over the whole range (`hour` = fromHour): what a table of 10,000 CIDs needs. */
    grain: Grain = "hour",
    /** Only these CIDs (by=cid): the rows shown, for their series. */
    cids?: string[],
  ): SalesRow[] {
    const params: Record<string, string> = { from: range.fromHour, to: range.toHour };
    if (range.instructionId) params.instruction = range.instructionId;
    if (range.cid === undefined && by !== "cid") {
      const perInstruction = by === "instruction" || range.instructionId !== undefined;
      const key = by === "instruction" ? "instruction_id" : "''";
      const rows = q<SalesRow & { oversized: number }>(
        `SELECT ${grainOf(grain, "hour")} AS hour, ${key} AS key, network, asset, sum(sales) AS sales, cast(sum(amount) AS text) AS amount,
                sum(oversized) AS oversized
         FROM ${perInstruction ? "sales_instruction_hourly" : "sales_hourly"}
         WHERE ${range.instructionId ? "instruction_id = $instruction AND " : ""}hour >= $from AND hour < $to
         GROUP BY 1, 2, 3, 4 HAVING sum(sales) <> 0`,
      ).all(params);
      // An amount too long for the rollup's sum in the range: the ledger's exact sum instead.
      if (!rows.some((r) => r.oversized > 0)) return rows;
    }
    // One CID (its own index), or every CID of the range (by created_at): the ledger itself.
    params.fromIso = `${range.fromHour}:00:00.000Z`;
    params.toIso = `${range.toHour}:00:00.000Z`;
    if (range.cid !== undefined) params.cid = range.cid;
    if (cids) params.cids = JSON.stringify(cids);
    const key = by === "cid" ? "cid" : by === "instruction" ? "instruction_id" : "''";
    return exact(
      q<SalesRow & { big?: string | null }>(
        `SELECT ${grainOf(grain, "created_at")} AS hour, ${key} AS key, network, asset,
              count(*) AS sales, ${LEDGER_AMOUNT}
       FROM payments WHERE state = 'settled' AND created_at >= $fromIso AND created_at < $toIso
       ${range.cid !== undefined ? "AND cid = $cid" : ""} ${range.instructionId ? "AND instruction_id = $instruction" : ""}
       ${cids ? "AND cid IN (SELECT value FROM json_each($cids))" : ""}
       GROUP BY 1, 2, 3, 4`,
      ).all(params),
    );
  }

  /** Offers and proofs per hour (and per `by`) over a range, as flushed: the shop's, an instruction's or a CID's. */
  function funnel(
    range: HourRange,
    by: "none" | "cid" | "instruction" = "none",
    grain: Grain = "hour",
  ): FunnelHourRow[] {
    const params: Record<string, string> = { from: range.fromHour, to: range.toHour };
    if (range.instructionId) params.instruction = range.instructionId;
    const instruction = range.instructionId ? " AND instruction_id = $instruction" : "";
    if (range.cid === undefined && by !== "cid") {
      if (by === "none" && !range.instructionId)
        return q<FunnelHourRow>(
          `SELECT ${grainOf(grain, "hour")} AS hour, '' AS key, sum(offers) AS offers, sum(proofs) AS proofs
           FROM funnel_shop_hourly WHERE hour >= $from AND hour < $to GROUP BY 1`,
        ).all(params);
      const key = by === "instruction" ? "instruction_id" : "''";
      return q<FunnelHourRow>(
        `SELECT ${grainOf(grain, "hour")} AS hour, ${key} AS key, sum(offers) AS offers, sum(proofs) AS proofs
         FROM funnel_instruction_hourly
         WHERE hour >= $from AND hour < $to${instruction} GROUP BY 1, 2`,
      ).all(params);
    }
    if (range.cid !== undefined) params.cid = range.cid;
    const key = by === "cid" ? "cid" : by === "instruction" ? "instruction_id" : "''";
    return q<FunnelHourRow>(
      `SELECT ${grainOf(grain, "hour")} AS hour, ${key} AS key, sum(offers) AS offers, sum(proofs) AS proofs
       FROM funnel_hourly
       WHERE hour >= $from AND hour < $to${range.cid !== undefined ? " AND cid = $cid" : ""}${instruction} GROUP BY 1, 2`,
    ).all(params);
  }

  /**
   * Settled totals per network and asset of payments created in [from, to)
   * (ISO times, either open), optionally under one instruction: whole hours
   * from the rollup, the uneven ends from the ledger (by created_at), so the
   * answer is exact for any bounds. GET /v3/x402/payments' `totals`.
   */
  function paymentTotals(f: { from?: string; to?: string; instructionId?: string }) {
    const fromMs = f.from === undefined ? undefined : Date.parse(f.from);
    const toMs = f.to === undefined ? undefined : Date.parse(f.to);
    // Whole hours: [first hour starting at or after `from`, last hour start at or before `to`).
    const wholeFrom = fromMs === undefined ? undefined : Math.ceil(fromMs / HOUR) * HOUR;
    const wholeTo = toMs === undefined ? undefined : Math.floor(toMs / HOUR) * HOUR;
    const parts: { network: string; asset: string; sales: number; amount: string; oversized?: number }[] = [];
    const instruction = f.instructionId ? " AND instruction_id = $instruction" : "";
    const base: Record<string, string> = f.instructionId ? { instruction: f.instructionId } : {};
    const ledger = (from: string | undefined, to: string | undefined) => {
      const params = { ...base };
      let where = "state = 'settled'";
      if (from !== undefined) where += " AND created_at >= $from";
      if (from !== undefined) params.from = from;
      if (to !== undefined) where += " AND created_at < $to";
      if (to !== undefined) params.to = to;
      parts.push(
        ...exact(
          q<{ network: string; asset: string; sales: number; amount: string; big?: string | null }>(
            `SELECT network, asset, count(*) AS sales, ${LEDGER_AMOUNT}
             FROM payments WHERE ${where}${instruction} GROUP BY 1, 2`,
          ).all(params),
        ),
      );
    };
    if (wholeFrom === undefined && wholeTo === undefined) {
      // All time: the all-time rollup, a row per instruction, network and asset.
      parts.push(
        ...q<{ network: string; asset: string; sales: number; amount: string; oversized: number }>(
          `SELECT network, asset, sum(sales) AS sales, cast(sum(amount) AS text) AS amount, sum(oversized) AS oversized
           FROM sales_totals${f.instructionId ? " WHERE instruction_id = $instruction" : ""} GROUP BY 1, 2`,
        ).all(base),
      );
      if (parts.some((p) => (p.oversized ?? 0) > 0)) {
        parts.length = 0;
        ledger(undefined, undefined);
      }
    } else if (wholeFrom !== undefined && wholeTo !== undefined && wholeFrom >= wholeTo) {
      ledger(f.from, f.to); // within one hour: the ledger alone
    } else {
      const params = { ...base };
      let where = "1 = 1";
      if (wholeFrom !== undefined) {
        where += " AND hour >= $from";
        params.from = hourKey(wholeFrom);
        if (wholeFrom !== fromMs) ledger(f.from, new Date(wholeFrom).toISOString());
      }
      if (wholeTo !== undefined) {
        where += " AND hour < $to";
        params.to = hourKey(wholeTo);
        if (wholeTo !== toMs) ledger(new Date(wholeTo).toISOString(), f.to);
      }
      parts.push(
        ...q<{ network: string; asset: string; sales: number; amount: string }>(
          `SELECT network, asset, sum(sales) AS sales, cast(sum(amount) AS text) AS amount, sum(oversized) AS oversized
           FROM ${f.instructionId ? "sales_instruction_hourly" : "sales_hourly"} WHERE ${where}${instruction} GROUP BY 1, 2`,
        ).all(params),
      );
      // An amount too long for the rollup's sum in the range: the ledger's exact sum of all of it instead.
      if (parts.some((p) => (p.oversized ?? 0) > 0)) {
        parts.length = 0;
        ledger(f.from, f.to);
      }
    }
    const totals = new Map<string, { network: string; asset: string; amount: bigint; count: number }>();
    for (const p of parts) {
      const k = `${p.network}|${p.asset}`;
      const t = totals.get(k) ?? { network: p.network, asset: p.asset, amount: 0n, count: 0 };
      t.amount += BigInt(p.amount ?? "0");
      t.count += p.sales;
      totals.set(k, t);
    }
    return [...totals.values()]
      .filter((t) => t.count !== 0)
      .sort((a, b) => (a.network === b.network ? cmp(a.asset, b.asset) : cmp(a.network, b.network)))
      .map((t) => ({ network: t.network, asset: t.asset, amount: t.amount.toString(), count: t.count }));
  }

  /** Pending payments (a settlement running or unconfirmed): the /metrics gauge, by its partial index. */
  const pendingStatement = sqlite.query<{ n: number }, []>(
    "SELECT count(*) AS n FROM payments WHERE state = 'pending'",
  );
  const pending = () => pendingStatement.get()?.n ?? 0;

  /** Settled revenue per network and asset since the ledger began: the /metrics revenue counters. */
  const revenueStatement = sqlite.query<{ network: string; asset: string; sales: number; amount: string }, []>(
    "SELECT network, asset, sum(sales) AS sales, cast(sum(amount) AS text) AS amount FROM sales_totals GROUP BY 1, 2 HAVING sum(sales) <> 0",
  );
  const revenue = () => revenueStatement.all();

  return { sales, funnel, paymentTotals, pending, revenue };
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export type StatsQueries = ReturnType<typeof createStatsQueries>;
