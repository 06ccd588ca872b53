/**
 * Offers (402 answers) and proofs (payments presented) per hour and CID:
 * counted in memory on the request path, added to funnel_hourly,
 * funnel_instruction_hourly and funnel_shop_hourly (this module and
 * counters-pg.ts are their only writers) every few seconds and at a clean stop. The 402 path is the hot one (~9 us of server CPU on
 * a quiet machine): counting one costs a Date.now() and a Map lookup, never
 * a write to the database (docs/BENCHMARKS.md "Stats").
 *
 * A flush ADDS to the rows (an upsert that sums), never sets them: several
 * replicas counting the same hour and CID each add their own counts.
 *
 * A crash loses at most the last flush interval of counts; a clean stop
 * (server.stop) loses none.
 */
import type { Database } from "bun:sqlite";
import type { Awaitable } from "../db/awaitable";
import { hourKey } from "./buckets";

const HOUR = 3_600_000;

/** What is counted: a priced CID under its instruction (the catalog's PricedContent fits). */
export interface Counted {
  cid: string;
  instruction: { id: string };
}

interface Tally {
  cid: string;
  instructionId: string;
  offers: number;
  proofs: number;
}

/** One hour's counts not yet written. */
export interface FunnelRow {
  hour: string;
  cid: string;
  instructionId: string;
  offers: number;
  proofs: number;
}

export const FLUSH_INTERVAL_MS = 5_000;

/**
 * The counting itself, whatever the engine: tallies per hour, and the rows a
 * flush takes. `take` hands the rows to a write; `written` or `failed` ends it
 * (a failed write's rows are carried to the next flush). Until then they stay
 * in `unflushed`, so a report never misses counts a write is still carrying
 * (report.ts reads them before the flushed rows).
 */
export function funnelTally() {
  // Keyed by the catalog's item object: a Map lookup by identity, no string built per request.
  let current = new Map<Counted, Tally>();
  let currentHourEnd = 0;
  let currentHour = "";
  /** Hours that ended and are not written yet (normally none: a flush follows). */
  let closed: { hour: string; tallies: Map<Counted, Tally> }[] = [];
  /** Rows of a flush that failed (database busy or closed): tried again with the next one. */
  let carried: FunnelRow[] = [];
  /** Rows of the write under way (PostgreSQL: while it awaits its commit). */
  let inFlight: FunnelRow[] = [];
  /** Since start, for /metrics. */
  let offersTotal = 0;
  let proofsTotal = 0;

  function tally(item: Counted): Tally {
    const now = Date.now();
    if (now >= currentHourEnd) {
      if (current.size > 0) closed.push({ hour: currentHour, tallies: current });
      current = new Map();
      currentHourEnd = (Math.floor(now / HOUR) + 1) * HOUR;
      currentHour = hourKey(now);
    }
    let t = current.get(item);
    if (t === undefined) {
      t = { cid: item.cid, instructionId: item.instruction.id, offers: 0, proofs: 0 };
      current.set(item, t);
    }
    return t;
  }

  /** Every count not written yet, merged per hour, CID and instruction. */
  function unflushed(): FunnelRow[] {
    const rows = new Map<string, FunnelRow>();
    const add = (hour: string, t: Tally) => {
      const key = `${hour}|${t.cid}|${t.instructionId}`;
      const row = rows.get(key);
      if (row) {
        row.offers += t.offers;
        row.proofs += t.proofs;
      } else rows.set(key, { hour, cid: t.cid, instructionId: t.instructionId, offers: t.offers, proofs: t.proofs });
    };
    for (const r of inFlight) add(r.hour, r);
    for (const r of carried) add(r.hour, r);
    for (const c of closed) for (const t of c.tallies.values()) add(c.hour, t);
    for (const t of current.values()) add(currentHour, t);
    return [...rows.values()];
  }

  return {
    /** A 402 that named a price for this CID. */
    offer(item: Counted): void {
      tally(item).offers++;
      offersTotal++;
    },
    /** A payment presented for this CID, whatever its outcome. */
    proof(item: Counted): void {
      tally(item).proofs++;
      proofsTotal++;
    },
    unflushed,
    /** The rows to write (every count so far), counting afresh from here; one write at a time. */
    take(): FunnelRow[] {
      const rows = unflushed();
      current = new Map();
      currentHourEnd = 0;
      closed = [];
      carried = [];
      inFlight = rows;
      return rows;
    },
    written(): void {
      inFlight = [];
    },
    /** Rolled back: the rows are kept for the next flush. */
    failed(): void {
      carried = inFlight;
      inFlight = [];
    },
    totals: () => ({ offers: offersTotal, proofs: proofsTotal }),
  };
}

/** A flush's rows at the three grains: per CID, summed per instruction, summed for the shop. */
export function funnelGrains(rows: FunnelRow[]) {
  const byInstruction = new Map<string, FunnelRow>();
  const byHour = new Map<string, FunnelRow>();
  const sum = (into: Map<string, FunnelRow>, key: string, r: FunnelRow) => {
    const t = into.get(key);
    if (t) {
      t.offers += r.offers;
      t.proofs += r.proofs;
    } else into.set(key, { ...r });
  };
  for (const r of rows) {
    sum(byInstruction, `${r.hour}|${r.instructionId}`, r);
    sum(byHour, r.hour, r);
  }
  return { byCid: rows, byInstruction: [...byInstruction.values()], byHour: [...byHour.values()] };
}

/** The SQLite counters: a flush is one synchronous transaction (microseconds per row). */
export function createFunnelCounters(sqlite: Database, options: { flushIntervalMs?: number } = {}) {
  const addByCid = sqlite.prepare(
    `INSERT INTO funnel_hourly (cid, hour, instruction_id, offers, proofs) VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT DO UPDATE SET offers = offers + excluded.offers, proofs = proofs + excluded.proofs`,
  );
  const addInstruction = sqlite.prepare(
    `INSERT INTO funnel_instruction_hourly (instruction_id, hour, offers, proofs) VALUES (?1, ?2, ?3, ?4)
     ON CONFLICT DO UPDATE SET offers = offers + excluded.offers, proofs = proofs + excluded.proofs`,
  );
  const addShop = sqlite.prepare(
    `INSERT INTO funnel_shop_hourly (hour, offers, proofs) VALUES (?1, ?2, ?3)
     ON CONFLICT DO UPDATE SET offers = offers + excluded.offers, proofs = proofs + excluded.proofs`,
  );
  const counts = funnelTally();

  /** The three grains in one transaction. */
  const write = sqlite.transaction((rows: FunnelRow[]) => {
    const { byCid, byInstruction, byHour } = funnelGrains(rows);
    for (const r of byCid) addByCid.run(r.cid, r.hour, r.instructionId, r.offers, r.proofs);
    for (const t of byInstruction) addInstruction.run(t.instructionId, t.hour, t.offers, t.proofs);
    for (const t of byHour) addShop.run(t.hour, t.offers, t.proofs);
  });

  /** Writes every count gathered so far (one transaction) and starts afresh. */
  function flush(): number {
    // Taken before the write: counts made while it runs (none: it is synchronous) would go to the next one.
    const rows = counts.take();
    if (rows.length === 0) return 0;
    try {
      write(rows);
    } catch (error) {
      counts.failed(); // rolled back: kept for the next flush
      throw error;
    }
    counts.written();
    return rows.length;
  }

  return countersOf(
    counts,
    flush,
    () => {
      try {
        flush();
      } catch {
        // The database is busy or closed: the counts stay in memory for the next flush.
      }
    },
    options,
  );
}

/**
 * Counters over a tally and an engine's flush: counting, the periodic flush (`tick` every
 * `flushIntervalMs`, default 5 s, until stop; the timer never keeps the process alive) and the
 * last flush at stop (a clean stop loses no count).
 */
export function countersOf<Written extends number | Promise<number>>(
  counts: ReturnType<typeof funnelTally>,
  flush: () => Written,
  tick: () => void,
  options: { flushIntervalMs?: number },
) {
  let timer: ReturnType<typeof setInterval> | undefined;
  let stopped = false;
  return {
    offer: counts.offer,
    proof: counts.proof,
    unflushed: counts.unflushed,
    /** Writes every count gathered so far and starts afresh; answers how many rows it wrote. */
    flush,
    /** Since this process started (the /metrics counters). */
    totals: counts.totals,
    start(): void {
      if (timer || stopped) return;
      timer = setInterval(tick, options.flushIntervalMs ?? FLUSH_INTERVAL_MS);
      timer.unref?.();
    },
    /** Stops the timer and writes what is left. */
    stop(): Written {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      return flush();
    },
  };
}

export type SqliteFunnelCounters = ReturnType<typeof createFunnelCounters>;

/** Either engine's counters: counting is synchronous on both, writing may await. */
export type FunnelCounters = Awaitable<SqliteFunnelCounters, "offer" | "proof" | "unflushed" | "totals" | "start">;
