/**
 * The statistics' reads, as raw SQL over either engine: the rollups
 * (sales_*, funnel_*; schema.ts says which grain answers what) for whole
 * hours, the payments table for one CID's sales and for the uneven edges of
 * a time range. Nothing here writes.
 *
 * Written once for both engines: the few fragments that differ are the
 * dialect's, and each step chains with `then` (db/awaitable.ts), so on
 * SQLite every read still answers synchronously (bun:sqlite caches each SQL
 * text as a prepared statement) and the ledger store's totals stay
 * synchronous; on PostgreSQL each read is a promise.
 *
 * Amounts are summed by the database as 64-bit integers and read as text:
 * exact, and past JS's 2^53.
 */
import type { Database } from "bun:sqlite";
import { type SQL, sql } from "drizzle-orm";
import { type Async, type Awaitable, type MaybePromise, then } from "../db/awaitable";
import type { Pg } from "../db/pg";
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

export type By = "none" | "cid" | "instruction";

/** Settled totals of one network and asset (GET /v3/x402/payments' `totals`). */
export interface PaymentTotal {
  network: string;
  asset: string;
  amount: string;
  count: number;
}

export interface TotalsFilter {
  from?: string;
  to?: string;
  instructionId?: string;
}

/** The reads of either engine; the SQLite ones answer at once (the ledger store's totals rely on it). */
export interface SqliteStatsQueries {
  /**
   * Settled sales per hour (and per `by`) over a range: the shop's or an
   * instruction's rollup, or the payments of one CID (or of every CID, by=cid).
   * `grain` "range": one row per key over the whole range (`hour` = fromHour): what a table of
   * 10,000 CIDs needs. `cids`: only these CIDs (by=cid): the rows shown, for their series.
   */
  sales(range: HourRange, by?: By, grain?: Grain, cids?: string[]): SalesRow[];
  /** Offers and proofs per hour (and per `by`) over a range, as flushed: the shop's, an instruction's or a CID's. */
  funnel(range: HourRange, by?: By, grain?: Grain): FunnelHourRow[];
  /**
   * Settled totals per network and asset of payments created in [from, to)
   * (ISO times, either open), optionally under one instruction: whole hours
   * from the rollup, the uneven ends from the ledger (by created_at), so the
   * answer is exact for any bounds. GET /v3/x402/payments' `totals`.
   */
  paymentTotals(f: TotalsFilter): PaymentTotal[];
  /** Pending payments (a settlement running or unconfirmed): the /metrics gauge, by its partial index. */
  pending(): number;
  /** Settled revenue per network and asset since the ledger began: the /metrics revenue counters. */
  revenue(): { network: string; asset: string; sales: number; amount: string }[];
}

/** Either engine's reads: what the report and the metrics await. */
export type StatsQueries = Awaitable<SqliteStatsQueries>;

/** What differs between the engines: how a statement runs, and three fragments of SQL. */
interface Dialect {
  /** Rows of a statement with `$name` parameters: now (SQLite) or as a promise (PostgreSQL). */
  all<R>(text: string, params: Record<string, string>): MaybePromise<R[]>;
  /** `$from` as a column of the select list (the "range" grain's hour). */
  fromHour: string;
  /**
   * Settled amounts summed from the ledger, exactly: amounts of up to 15 digits by the database
   * (as the rollups' triggers read them), longer ones (never a real price) listed as `big` and
   * added as BigInts by `exact`.
   */
  ledgerAmount: string;
  /** `cid` is one of the JSON array `$cids`. */
  cidIn: string;
}

const SQLITE: Omit<Dialect, "all"> = {
  fromHour: "$from",
  ledgerAmount: `cast(sum(CASE WHEN length(amount) <= 15 THEN cast(amount AS integer) ELSE 0 END) AS text) AS amount,
  group_concat(CASE WHEN length(amount) > 15 THEN amount END) AS big`,
  cidIn: "cid IN (SELECT value FROM json_each($cids))",
};

const POSTGRES: Omit<Dialect, "all"> = {
  // A bare parameter in the select list has no type for PostgreSQL to infer.
  fromHour: "CAST($from AS text)",
  // sales_amount(): the triggers' own reading of an amount (drizzle-pg/0002), SQLite's cast.
  ledgerAmount: `cast(sum(sales_amount(amount)) AS text) AS amount,
  string_agg(CASE WHEN length(amount) > 15 THEN amount END, ',') AS big`,
  // Declared text first: a parameter PostgreSQL types json is JSON-encoded again by Bun's client
  // (the array's text would arrive as one JSON string).
  cidIn: "cid IN (SELECT json_array_elements_text(CAST(CAST($cids AS text) AS json)))",
};

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

/** Every value, at once when none is a promise. */
function allOf<T>(values: MaybePromise<T>[]): MaybePromise<T[]> {
  return values.some((v) => v instanceof Promise) ? Promise.all(values) : (values as T[]);
}

function statsQueries(d: Dialect): StatsQueries {
  /** The hour-key expression of a grain over a column holding an hour key or an ISO time. */
  const grainOf = (grain: Grain, column: string) =>
    grain === "hour" ? `substr(${column}, 1, 13)` : grain === "day" ? `substr(${column}, 1, 10) || 'T00'` : d.fromHour;

  function sales(range: HourRange, by: By = "none", grain: Grain = "hour", cids?: string[]) {
    const params: Record<string, string> = { from: range.fromHour, to: range.toHour };
    if (range.instructionId) params.instruction = range.instructionId;
    // One CID (its own index), or every CID of the range (by created_at): the ledger itself.
    const ledger = () => {
      params.fromIso = `${range.fromHour}:00:00.000Z`;
      params.toIso = `${range.toHour}:00:00.000Z`;
      if (range.cid !== undefined) params.cid = range.cid;
      if (cids) params.cids = JSON.stringify(cids);
      const key = by === "cid" ? "cid" : by === "instruction" ? "instruction_id" : "''";
      return then(
        d.all<SalesRow & { big?: string | null }>(
          `SELECT ${grainOf(grain, "created_at")} AS hour, ${key} AS key, network, asset,
              count(*) AS sales, ${d.ledgerAmount}
       FROM payments WHERE state = 'settled' AND created_at >= $fromIso AND created_at < $toIso
       ${range.cid !== undefined ? "AND cid = $cid" : ""} ${range.instructionId ? "AND instruction_id = $instruction" : ""}
       ${cids ? `AND ${d.cidIn}` : ""}
       GROUP BY 1, 2, 3, 4`,
          params,
        ),
        exact,
      );
    };
    if (range.cid !== undefined || by === "cid") return ledger();
    const perInstruction = by === "instruction" || range.instructionId !== undefined;
    const key = by === "instruction" ? "instruction_id" : "''";
    const rows = d.all<SalesRow & { oversized: number }>(
      `SELECT ${grainOf(grain, "hour")} AS hour, ${key} AS key, network, asset, sum(sales) AS sales, cast(sum(amount) AS text) AS amount,
                sum(oversized) AS oversized
         FROM ${perInstruction ? "sales_instruction_hourly" : "sales_hourly"}
         WHERE ${range.instructionId ? "instruction_id = $instruction AND " : ""}hour >= $from AND hour < $to
         GROUP BY 1, 2, 3, 4 HAVING sum(sales) <> 0`,
      params,
    );
    // An amount too long for the rollup's sum in the range: the ledger's exact sum instead.
    return then(rows, (rows): MaybePromise<SalesRow[]> => (rows.some((r) => r.oversized > 0) ? ledger() : rows));
  }

  function funnel(range: HourRange, by: By = "none", grain: Grain = "hour") {
    const params: Record<string, string> = { from: range.fromHour, to: range.toHour };
    if (range.instructionId) params.instruction = range.instructionId;
    const instruction = range.instructionId ? " AND instruction_id = $instruction" : "";
    if (range.cid === undefined && by !== "cid") {
      if (by === "none" && !range.instructionId)
        return d.all<FunnelHourRow>(
          `SELECT ${grainOf(grain, "hour")} AS hour, '' AS key, sum(offers) AS offers, sum(proofs) AS proofs
           FROM funnel_shop_hourly WHERE hour >= $from AND hour < $to GROUP BY 1`,
          params,
        );
      const key = by === "instruction" ? "instruction_id" : "''";
      return d.all<FunnelHourRow>(
        `SELECT ${grainOf(grain, "hour")} AS hour, ${key} AS key, sum(offers) AS offers, sum(proofs) AS proofs
         FROM funnel_instruction_hourly
         WHERE hour >= $from AND hour < $to${instruction} GROUP BY 1, 2`,
        params,
      );
    }
    if (range.cid !== undefined) params.cid = range.cid;
    const key = by === "cid" ? "cid" : by === "instruction" ? "instruction_id" : "''";
    return d.all<FunnelHourRow>(
      `SELECT ${grainOf(grain, "hour")} AS hour, ${key} AS key, sum(offers) AS offers, sum(proofs) AS proofs
       FROM funnel_hourly
       WHERE hour >= $from AND hour < $to${range.cid !== undefined ? " AND cid = $cid" : ""}${instruction} GROUP BY 1, 2`,
      params,
    );
  }

  type Part = { network: string; asset: string; sales: number; amount: string; oversized?: number };

  function paymentTotals(f: TotalsFilter) {
    const fromMs = f.from === undefined ? undefined : Date.parse(f.from);
    const toMs = f.to === undefined ? undefined : Date.parse(f.to);
    // Whole hours: [first hour starting at or after `from`, last hour start at or before `to`).
    const wholeFrom = fromMs === undefined ? undefined : Math.ceil(fromMs / HOUR) * HOUR;
    const wholeTo = toMs === undefined ? undefined : Math.floor(toMs / HOUR) * HOUR;
    const instruction = f.instructionId ? " AND instruction_id = $instruction" : "";
    const base: Record<string, string> = f.instructionId ? { instruction: f.instructionId } : {};
    const ledger = (from: string | undefined, to: string | undefined): MaybePromise<Part[]> => {
      const params = { ...base };
      let where = "state = 'settled'";
      if (from !== undefined) where += " AND created_at >= $from";
      if (from !== undefined) params.from = from;
      if (to !== undefined) where += " AND created_at < $to";
      if (to !== undefined) params.to = to;
      return then(
        d.all<Part & { big?: string | null }>(
          `SELECT network, asset, count(*) AS sales, ${d.ledgerAmount}
             FROM payments WHERE ${where}${instruction} GROUP BY 1, 2`,
          params,
        ),
        exact,
      );
    };
    /** The rollup's rows, or the ledger's exact sums of the whole range when an amount was too long to sum. */
    const unlessOversized = (parts: Part[]) =>
      parts.some((p) => (p.oversized ?? 0) > 0) ? ledger(f.from, f.to) : parts;

    let parts: MaybePromise<Part[]>;
    if (wholeFrom === undefined && wholeTo === undefined) {
      // All time: the all-time rollup, a row per instruction, network and asset.
      parts = then(
        d.all<Part>(
          `SELECT network, asset, sum(sales) AS sales, cast(sum(amount) AS text) AS amount, sum(oversized) AS oversized
           FROM sales_totals${f.instructionId ? " WHERE instruction_id = $instruction" : ""} GROUP BY 1, 2`,
          base,
        ),
        unlessOversized,
      );
    } else if (wholeFrom !== undefined && wholeTo !== undefined && wholeFrom >= wholeTo) {
      parts = ledger(f.from, f.to); // within one hour: the ledger alone
    } else {
      // The uneven ends from the ledger, the whole hours between from the rollup (asked together).
      const edges: MaybePromise<Part[]>[] = [];
      const params = { ...base };
      let where = "1 = 1";
      if (wholeFrom !== undefined) {
        where += " AND hour >= $from";
        params.from = hourKey(wholeFrom);
        if (wholeFrom !== fromMs) edges.push(ledger(f.from, new Date(wholeFrom).toISOString()));
      }
      if (wholeTo !== undefined) {
        where += " AND hour < $to";
        params.to = hourKey(wholeTo);
        if (wholeTo !== toMs) edges.push(ledger(new Date(wholeTo).toISOString(), f.to));
      }
      const whole = d.all<Part>(
        `SELECT network, asset, sum(sales) AS sales, cast(sum(amount) AS text) AS amount, sum(oversized) AS oversized
           FROM ${f.instructionId ? "sales_instruction_hourly" : "sales_hourly"} WHERE ${where}${instruction} GROUP BY 1, 2`,
        params,
      );
      parts = then(allOf([whole, ...edges]), ([rollup, ...ends]) =>
        then(unlessOversized(rollup), (sums) => (sums === rollup ? [...ends.flat(), ...rollup] : sums)),
      );
    }
    return then(parts, totalsOf);
  }

  return {
    sales,
    funnel,
    paymentTotals,
    pending: () =>
      then(d.all<{ n: number }>("SELECT count(*) AS n FROM payments WHERE state = 'pending'", {}), (r) => r[0]?.n ?? 0),
    revenue: () =>
      d.all<{ network: string; asset: string; sales: number; amount: string }>(
        "SELECT network, asset, sum(sales) AS sales, cast(sum(amount) AS text) AS amount FROM sales_totals GROUP BY 1, 2 HAVING sum(sales) <> 0",
        {},
      ),
  };
}

/** Parts summed per network and asset, sorted by network then asset; those of no sale dropped. */
function totalsOf(parts: { network: string; asset: string; sales: number; amount: string }[]): PaymentTotal[] {
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

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The reads over SQLite: synchronous (the dialect never answers with a promise, so no `then` waits). */
export function createStatsQueries(sqlite: Database): SqliteStatsQueries {
  return statsQueries({
    ...SQLITE,
    all: <R>(text: string, params: Record<string, string>) => sqlite.query<R, Record<string, string>>(text).all(params),
  }) as SqliteStatsQueries;
}

/** Columns that are counts and sums: numbers in JS, as bun:sqlite reads them (Bun's client reads bigint as text). */
const COUNTS = ["sales", "offers", "proofs", "oversized", "n"] as const;

/** `$name` parameters, as the SQLite text has them, become drizzle's bound parameters. */
const PARAMETER = /\$([A-Za-z]+)/;

/** The reads over PostgreSQL, through `pg.q()` (a caller's transaction, else the pool). */
export function createPgStatsQueries(pg: Pg): Async<SqliteStatsQueries> {
  const pieces = new Map<string, string[]>();
  return statsQueries({
    ...POSTGRES,
    async all<R>(text: string, params: Record<string, string>): Promise<R[]> {
      let split = pieces.get(text);
      if (!split) pieces.set(text, (split = text.split(new RegExp(PARAMETER, "g"))));
      // split: raw text, a parameter's name, raw text, ...
      const chunks: SQL[] = split.map((piece, i) => {
        if (i % 2 === 0) return sql.raw(piece);
        const value = params[piece];
        if (value === undefined) throw new Error(`stats query: no value for $${piece}`);
        return sql`${value}`;
      });
      const rows = (await pg.q().execute(sql.join(chunks))) as unknown as Record<string, unknown>[];
      return Array.from(rows, (row) => {
        for (const c of COUNTS) if (typeof row[c] === "string" || typeof row[c] === "bigint") row[c] = Number(row[c]);
        return row as R;
      });
    },
  }) as Async<SqliteStatsQueries>;
}
