/**
 * The siwx_nonces table on PostgreSQL: what keeps a sign-in single-use
 * across every replica. `use` is one INSERT ... ON CONFLICT DO NOTHING: the
 * primary key decides who was first, whichever replica asks, and a second
 * INSERT of the same nonce while the first one's transaction is open waits
 * for it, then inserts nothing.
 *
 * `useSoon` writes a turn's sign-ins as one multi-row INSERT (turn-batch.ts),
 * as the SQLite store does: 2,000 sign-ins at once took 309-396 ms as one
 * INSERT each over the pool's connections and 47-243 ms batched (three runs of
 * a throwaway script against the test harness's server, fsync off, on a
 * loaded machine), and a burst of sign-ins then holds one connection, not
 * the whole pool. The rows go in nonce order: two replicas inserting
 * overlapping batches take the keys' locks in one order, so neither waits on
 * the other in a cycle (a deadlock would refuse both batches). A batch the
 * database refuses rejects every caller in it, and none of it is recorded.
 */
import { sql } from "drizzle-orm";
import type { Async } from "../db/awaitable";
import type { Pg } from "../db/pg";
import { siwxNonces } from "../db/schema-pg";
import { MAX_BATCH, type SqliteSiwxNonceStore } from "./siwx-nonces";
import { turnBatcher } from "./turn-batch";

/** `useSoon` answers a promise on SQLite already (Async would wrap it twice). */
export type PgSiwxNonceStore = Omit<Async<SqliteSiwxNonceStore>, "useSoon"> & Pick<SqliteSiwxNonceStore, "useSoon">;

interface Use {
  nonce: string;
  at: number;
}

export function createPgSiwxNonceStore(pg: Pg): PgSiwxNonceStore {
  /** Inserts each distinct nonce once; answers the nonces this statement recorded. */
  async function insert(uses: readonly Use[]): Promise<Set<string>> {
    const distinct = new Map<string, number>();
    for (const u of uses) if (!distinct.has(u.nonce)) distinct.set(u.nonce, Math.floor(u.at));
    const rows = [...distinct].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const inserted = await pg
      .q()
      .insert(siwxNonces)
      .values(rows.map(([nonce, usedAt]) => ({ nonce, usedAt })))
      .onConflictDoNothing()
      .returning({ nonce: siwxNonces.nonce });
    return new Set(inserted.map((r) => r.nonce));
  }

  /** First use for the first call of a nonce this write recorded; every other call was not first. */
  async function writeBatch(batch: Use[]): Promise<boolean[]> {
    const recorded = await insert(batch);
    return batch.map((u) => recorded.delete(u.nonce));
  }

  const soon = turnBatcher(writeBatch, MAX_BATCH);

  return {
    use: async (nonce, nowSeconds) => (await insert([{ nonce, at: nowSeconds }])).has(nonce),
    useSoon: (nonce, nowSeconds) => soon({ nonce, at: nowSeconds }),
    async prune(beforeSeconds) {
      const [{ n }] = await pg.q().execute<{ n: number }>(
        sql`WITH gone AS (DELETE FROM ${siwxNonces} WHERE ${siwxNonces.usedAt} < ${Math.floor(beforeSeconds)} RETURNING 1)
            SELECT count(*)::int AS n FROM gone`,
      );
      return n;
    },
  };
}
