/**
 * The siwx_nonces table on PostgreSQL: what keeps a sign-in single-use
 * across every replica. `use` is one INSERT ... ON CONFLICT DO NOTHING: the
 * primary key decides who was first, whichever replica asks, and a second
 * INSERT of the same nonce while the first one's transaction is open waits
 * for it, then inserts nothing.
 *
 * `useSoon` is `use`: the SQLite store batches a turn's sign-ins into one
 * commit because each commit there is a WAL write under one writer lock;
 * PostgreSQL commits concurrent INSERTs from the pool's connections side by
 * side (and groups their WAL flushes itself).
 */
import { sql } from "drizzle-orm";
import type { Async } from "../db/awaitable";
import type { Pg } from "../db/pg";
import { siwxNonces } from "../db/schema-pg";
import type { SqliteSiwxNonceStore } from "./siwx-nonces";

/** `useSoon` answers a promise on SQLite already (Async would wrap it twice). */
export type PgSiwxNonceStore = Omit<Async<SqliteSiwxNonceStore>, "useSoon"> & Pick<SqliteSiwxNonceStore, "useSoon">;

export function createPgSiwxNonceStore(pg: Pg): PgSiwxNonceStore {
  async function use(nonce: string, nowSeconds: number): Promise<boolean> {
    const inserted = await pg
      .q()
      .insert(siwxNonces)
      .values({ nonce, usedAt: Math.floor(nowSeconds) })
      .onConflictDoNothing()
      .returning({ nonce: siwxNonces.nonce });
    return inserted.length === 1;
  }
  return {
    use,
    useSoon: use,
    async prune(beforeSeconds) {
      const [{ n }] = await pg.q().execute<{ n: number }>(
        sql`WITH gone AS (DELETE FROM ${siwxNonces} WHERE ${siwxNonces.usedAt} < ${Math.floor(beforeSeconds)} RETURNING 1)
            SELECT count(*)::int AS n FROM gone`,
      );
      return n;
    },
  };
}
