/**
 * The counters over PostgreSQL (counters.ts counts; this writes). Each
 * replica counts its own requests and flushes them with upserts that ADD
 * (`offers = t.offers + excluded.offers`), so replicas flushing into the
 * same hour and CID sum, whatever the order. A flush is one transaction
 * (three multi-row upserts); flushes of one process run one at a time.
 */
import { type SQL, sql } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import type { Pg, PgExecutor } from "../db/pg";
import { funnelHourly, funnelInstructionHourly, funnelShopHourly } from "../db/schema-pg";
import { countersOf, type FunnelCounters, type FunnelRow, funnelGrains, funnelTally } from "./counters";

/**
 * Rows per INSERT: PostgreSQL takes at most 65,535 parameters in a statement, and a CID row has
 * five. A flush of more distinct CIDs than this in one interval (a rare burst) makes more statements.
 */
const CHUNK = 5_000;

/** `column + excluded.column`: the upsert adds what this flush counted to what is there. */
const added = (column: PgColumn) => sql`${column} + excluded.${sql.identifier(column.name)}`;

/** Sorted by key: replicas upserting the same rows lock them in the same order, so never deadlock each other. */
const byKey = <R>(rows: R[], key: (r: R) => string) =>
  rows
    .map((r) => [key(r), r] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, r]) => r);

async function upsert<T extends PgTable>(
  tx: PgExecutor,
  table: T,
  target: PgColumn[],
  set: { offers: SQL; proofs: SQL },
  values: T["$inferInsert"][],
): Promise<void> {
  for (let i = 0; i < values.length; i += CHUNK)
    await tx
      .insert(table)
      .values(values.slice(i, i + CHUNK))
      .onConflictDoUpdate({ target, set });
}

export function createPgFunnelCounters(pg: Pg, options: { flushIntervalMs?: number } = {}): FunnelCounters {
  const counts = funnelTally();

  /** The three grains in one transaction. */
  const write = (rows: FunnelRow[]) =>
    pg.transaction(async (tx) => {
      const { byCid, byInstruction, byHour } = funnelGrains(rows);
      await upsert(
        tx,
        funnelHourly,
        [funnelHourly.cid, funnelHourly.hour, funnelHourly.instructionId],
        { offers: added(funnelHourly.offers), proofs: added(funnelHourly.proofs) },
        byKey(byCid, (r) => `${r.cid}|${r.hour}|${r.instructionId}`),
      );
      await upsert(
        tx,
        funnelInstructionHourly,
        [funnelInstructionHourly.instructionId, funnelInstructionHourly.hour],
        { offers: added(funnelInstructionHourly.offers), proofs: added(funnelInstructionHourly.proofs) },
        byKey(byInstruction, (r) => `${r.instructionId}|${r.hour}`),
      );
      await upsert(
        tx,
        funnelShopHourly,
        [funnelShopHourly.hour],
        { offers: added(funnelShopHourly.offers), proofs: added(funnelShopHourly.proofs) },
        byKey(byHour, (r) => r.hour),
      );
    });

  /** Takes every count gathered so far (at the call, before any await) and writes it in one transaction. */
  async function writeTaken(): Promise<number> {
    const rows = counts.take();
    if (rows.length === 0) return 0;
    try {
      await write(rows);
    } catch (error) {
      counts.failed(); // rolled back: kept for the next flush
      throw error;
    }
    counts.written();
    return rows.length;
  }

  /** The flush under way, if any: the next one waits for it (one write at a time, rows never taken twice). */
  let running: Promise<number> | undefined;

  /** Writes every count gathered so far and starts afresh: counts made while it awaits go to the next one. */
  function flush(): Promise<number> {
    const next = running ? running.catch(() => 0).then(writeTaken) : writeTaken();
    running = next;
    void next
      .finally(() => {
        if (running === next) running = undefined;
      })
      .catch(() => {});
    return next;
  }

  return countersOf(
    counts,
    flush,
    () => {
      // A write slower than the interval: this tick is skipped, its counts go with the next.
      if (running) return;
      // The database is busy or unreachable: the counts stay in memory for the next flush.
      flush().catch(() => {});
    },
    options,
  );
}
