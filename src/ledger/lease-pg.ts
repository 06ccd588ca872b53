/**
 * A named lease on PostgreSQL (the `leases` table): what lets one replica at
 * a time run a background job, the reconciler (reconcile.ts), and another
 * take it over when the holder stops or dies.
 *
 * `hold()` acquires or renews in one statement: the row is written when it is
 * absent, ours, or expired, and the database's row lock serializes two
 * replicas asking at once, so exactly one gets `true`. Times are the
 * database server's clock, not each replica's: replicas whose clocks disagree
 * still agree on when a lease has run out.
 *
 * A lease buys efficiency, not correctness: the reconciler's writes are
 * conditional (a pending row is settled or released once, an entitlement is
 * granted once per payment), so two replicas overlapping for a moment, after
 * a holder stalled past its lease, do the chain lookups twice and nothing
 * worse.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { sql } from "drizzle-orm";
import type { Pg } from "../db/pg";

/** The reconciler's lease. */
export const RECONCILE_LEASE = "reconciler";

/**
 * How long the reconciler's lease lasts: three rounds (RECONCILE_SECONDS each). The holder renews
 * it before every round, so it holds through a round that overruns its interval or a renewal lost
 * to a slow query, while a replica that died hands the job over within three intervals.
 */
export const reconcileLeaseMs = (intervalSeconds: number) => 3 * intervalSeconds * 1000;

/** The database's clock in unix ms. */
const NOW_MS = sql`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

export interface Lease {
  /** This process's name in the `holder` column. */
  readonly holder: string;
  /** Acquires the lease, or renews it when it is ours: true while we hold it. */
  hold(): Promise<boolean>;
  /** Gives it up at once (only if ours), so another replica takes over without waiting for it to run out. */
  release(): Promise<void>;
}

export function createPgLease(
  pg: Pg,
  name: string,
  ttlMs: number,
  /** Unique per process: the host and pid say who it is in psql, the random part makes it unique. */
  holder = `${hostname()}:${process.pid}:${randomUUID()}`,
): Lease {
  return {
    holder,
    async hold() {
      const rows = await pg.q().execute(
        sql`INSERT INTO leases (name, holder, expires_at) VALUES (${name}, ${holder}, ${NOW_MS} + ${ttlMs})
            ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
            WHERE leases.holder = excluded.holder OR leases.expires_at < ${NOW_MS}
            RETURNING holder`,
      );
      return rows.length === 1;
    },
    async release() {
      await pg.q().execute(sql`DELETE FROM leases WHERE name = ${name} AND holder = ${holder}`);
    },
  };
}
