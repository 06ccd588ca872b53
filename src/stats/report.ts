/**
 * The statistics as answered: hourly rows (rollups, ledger, counts not yet
 * flushed) summed into buckets and rows. No HTTP here: routes.ts validates
 * and calls `stats` and `breakdown`.
 */
import type { MaybePromise } from "../db/awaitable";
import { bucketStarts, ceilBucket, defaultFrom, floorBucket, hourKey, hourStart, usd } from "./buckets";
import type { FunnelRow } from "./counters";
import {
  BREAKDOWN_LIMIT,
  type BreakdownRow,
  type Bucket,
  type Figures,
  MAX_BUCKETS,
  type Revenue,
  type StatsBucket,
} from "./model";
import type { FunnelHourRow, SalesRow, StatsQueries } from "./queries";

export interface StatsRequest {
  /** ms; default now. */
  to?: number;
  /** ms; default by bucket (buckets.ts defaultFrom). */
  from?: number;
  bucket: Bucket;
  cid?: string;
  instructionId?: string;
}

export interface BreakdownRequest extends StatsRequest {
  by: "cid" | "instruction";
  sort: "revenue" | "sales" | "offers" | "proofs" | "conversion";
  limit?: number;
}

export type RangeError = { error: "range"; message: string };

export interface ReportDeps {
  queries: StatsQueries;
  /**
   * Counts gathered since the last flush: added, so an answer never lags this process's counters.
   * Other replicas' counts (PostgreSQL) show once they flush, within their flush interval.
   */
  unflushed: () => FunnelRow[];
  /** Instruction id -> name (breakdown by instruction); may be a store read that awaits. */
  instructionName?: (id: string) => MaybePromise<string | undefined>;
  /** CID -> a file path in the content folder (breakdown by CID). */
  pathsOf?: () => Map<string, string>;
  now?: () => number;
}

/** Running sums of one bucket, row or range. */
class Acc {
  offers = 0;
  proofs = 0;
  sales = 0;
  revenue = new Map<string, { network: string; asset: string; amount: bigint; sales: number }>();

  addSales(r: SalesRow) {
    this.sales += r.sales;
    const k = `${r.network}|${r.asset}`;
    const v = this.revenue.get(k) ?? { network: r.network, asset: r.asset, amount: 0n, sales: 0 };
    v.amount += BigInt(r.amount ?? "0");
    v.sales += r.sales;
    this.revenue.set(k, v);
  }

  addFunnel(r: { offers: number; proofs: number }) {
    this.offers += r.offers;
    this.proofs += r.proofs;
  }

  /** Dollars over every network: what "most revenue" sorts by. */
  usdTotal(): bigint {
    let sum = 0n;
    for (const v of this.revenue.values()) sum += v.amount;
    return sum;
  }

  figures(): Figures {
    const revenue: Revenue[] = [...this.revenue.values()]
      .filter((v) => v.sales !== 0)
      .sort((a, b) => (a.network === b.network ? cmp(a.asset, b.asset) : cmp(a.network, b.network)))
      .map((v) => ({
        network: v.network,
        asset: v.asset,
        amount: v.amount.toString(),
        usd: usd(v.amount),
        sales: v.sales,
      }));
    return {
      offers: this.offers,
      proofs: this.proofs,
      sales: this.sales,
      conversion: this.offers === 0 ? null : this.sales / this.offers,
      revenue,
    };
  }
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The range of a request, on bucket boundaries; an error when it is empty or too long. */
export function resolveRange(
  r: StatsRequest,
  now: number,
): { from: number; to: number; starts: number[] } | RangeError {
  const to = ceilBucket(r.to ?? now, r.bucket);
  const from = floorBucket(r.from ?? defaultFrom(to, r.bucket), r.bucket);
  if (from >= to) return { error: "range", message: "`from` must be before `to`" };
  const starts = bucketStarts(from, to, r.bucket, MAX_BUCKETS);
  if (!starts)
    return {
      error: "range",
      message: `more than ${MAX_BUCKETS} ${r.bucket}s: narrow the range or use a larger bucket`,
    };
  return { from, to, starts };
}

export function createReport(deps: ReportDeps) {
  const now = deps.now ?? Date.now;

  /** Which bucket (index into `starts`) an hour key falls in. */
  function bucketIndexer(starts: number[]) {
    const memo = new Map<string, number>();
    return (hour: string): number => {
      let i = memo.get(hour);
      if (i !== undefined) return i;
      const ms = hourStart(hour);
      // Binary search: the last start <= ms.
      let lo = 0;
      let hi = starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid] <= ms) lo = mid;
        else hi = mid - 1;
      }
      i = lo;
      memo.set(hour, i);
      return i;
    };
  }

  /** Counts not flushed yet within the range, shaped like flushed rows. */
  function pendingFunnel(
    unflushed: FunnelRow[],
    fromHour: string,
    toHour: string,
    r: StatsRequest,
    by: "none" | "cid" | "instruction",
  ): FunnelHourRow[] {
    const rows: FunnelHourRow[] = [];
    for (const u of unflushed) {
      if (u.hour < fromHour || u.hour >= toHour) continue;
      if (r.cid !== undefined && u.cid !== r.cid) continue;
      if (r.instructionId !== undefined && u.instructionId !== r.instructionId) continue;
      const key = by === "cid" ? u.cid : by === "instruction" ? u.instructionId : "";
      rows.push({ hour: u.hour, key, offers: u.offers, proofs: u.proofs });
    }
    return rows;
  }

  async function stats(r: StatsRequest) {
    const range = resolveRange(r, now());
    if ("error" in range) return range;
    const { from, to, starts } = range;
    const hours = { fromHour: hourKey(from), toHour: hourKey(to), cid: r.cid, instructionId: r.instructionId };
    const accs = starts.map(() => new Acc());
    const totals = new Acc();
    const indexOf = bucketIndexer(starts);
    const grain = r.bucket === "hour" ? "hour" : "day";
    // The counts not flushed taken before the flushed ones are read: a flush under way keeps its rows
    // in `unflushed` until it has committed (counters.ts), so a read racing it (PostgreSQL) may count
    // them twice for that moment, never miss them. On SQLite nothing runs in between.
    const unflushed = deps.unflushed();
    const [sales, funnel] = await Promise.all([
      deps.queries.sales(hours, "none", grain),
      deps.queries.funnel(hours, "none", grain),
    ]);
    for (const s of sales) {
      accs[indexOf(s.hour)].addSales(s);
      totals.addSales(s);
    }
    for (const f of [...funnel, ...pendingFunnel(unflushed, hours.fromHour, hours.toHour, r, "none")]) {
      accs[indexOf(f.hour)].addFunnel(f);
      totals.addFunnel(f);
    }
    const buckets: StatsBucket[] = starts.map((s, i) => ({ start: new Date(s).toISOString(), ...accs[i].figures() }));
    return {
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      bucket: r.bucket,
      buckets,
      totals: totals.figures(),
    };
  }

  async function breakdown(r: BreakdownRequest) {
    const range = resolveRange(r, now());
    if ("error" in range) return range;
    const { from, to, starts } = range;
    const hours = { fromHour: hourKey(from), toHour: hourKey(to), cid: r.cid, instructionId: r.instructionId };
    const indexOf = bucketIndexer(starts);
    const rows = new Map<string, { acc: Acc; series: number[] }>();
    const rowOf = (key: string) => {
      let row = rows.get(key);
      if (!row) rows.set(key, (row = { acc: new Acc(), series: starts.map(() => 0) }));
      return row;
    };
    // Per CID, one row per CID over the whole range (thousands of CIDs: no hourly rows held in
    // memory), and the series only for the rows answered, below. Per instruction, hourly rows (few).
    const grain = r.by === "cid" ? "range" : r.bucket === "hour" ? "hour" : "day";
    const unflushed = deps.unflushed(); // before the reads, as in `stats`
    const [sales, funnel] = await Promise.all([
      deps.queries.sales(hours, r.by, grain),
      deps.queries.funnel(hours, r.by, grain),
    ]);
    for (const s of sales) {
      const row = rowOf(s.key);
      row.acc.addSales(s);
      if (grain !== "range") row.series[indexOf(s.hour)] += s.sales;
    }
    for (const f of [...funnel, ...pendingFunnel(unflushed, hours.fromHour, hours.toHour, r, r.by)])
      rowOf(f.key).acc.addFunnel(f);

    const scored = [...rows.entries()].map(([key, row]) => ({ key, row, figures: row.acc.figures() }));
    const score = (x: (typeof scored)[number]): number | bigint => {
      switch (r.sort) {
        case "revenue":
          return x.row.acc.usdTotal();
        case "conversion":
          return x.figures.conversion ?? -1;
        default:
          return x.figures[r.sort];
      }
    };
    scored.sort((a, b) => {
      const sa = score(a);
      const sb = score(b);
      return sa === sb ? cmp(a.key, b.key) : sa > sb ? -1 : 1;
    });
    const limit = r.limit ?? BREAKDOWN_LIMIT.fallback;
    const shown = scored.slice(0, limit);
    if (grain === "range" && shown.length > 0) {
      for (const s of await deps.queries.sales(
        hours,
        "cid",
        r.bucket === "hour" ? "hour" : "day",
        shown.map((x) => x.key),
      ))
        rows.get(s.key)!.series[indexOf(s.hour)] += s.sales;
    }
    const paths = r.by === "cid" ? deps.pathsOf?.() : undefined;
    // Few rows by instruction (one per instruction sold under): their names asked together.
    const names = r.by === "instruction" ? await Promise.all(shown.map(({ key }) => deps.instructionName?.(key))) : [];
    const answered: BreakdownRow[] = shown.map(({ key, row, figures }, i) => {
      const out: BreakdownRow = { key, series: row.series, ...figures };
      if (r.by === "instruction") {
        const name = names[i];
        if (name !== undefined) out.name = name;
      } else {
        const path = paths?.get(key);
        if (path !== undefined) out.path = path;
      }
      return out;
    });
    return {
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      bucket: r.bucket,
      by: r.by,
      starts: starts.map((s) => new Date(s).toISOString()),
      rows: answered,
    };
  }

  return { stats, breakdown };
}

export type Report = ReturnType<typeof createReport>;
