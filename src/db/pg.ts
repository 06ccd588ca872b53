/**
 * Opens the PostgreSQL database (CIDGATE_DB=postgres://... or postgresql://...) and applies the
 * drizzle-kit migrations in drizzle-pg/ at open, serialized across processes, so replicas started
 * together on an empty database migrate it once and all start.
 *
 * Stores query through `q()`: the transaction of `transaction(fn)` when the caller is inside one
 * (kept in an AsyncLocalStorage), else the pool. So a store joins a transaction spanning several
 * stores without being handed it, as SQLite stores join the one connection's transaction.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { join } from "node:path";
import { SQL } from "bun";
import type { ExtractTablesWithRelations } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sql";
import { migrate } from "drizzle-orm/bun-sql/migrator";
import type { BunSQLQueryResultHKT } from "drizzle-orm/bun-sql/session";
import type { PgDatabase } from "drizzle-orm/pg-core";
import { displayUrl } from "../display-url";
import * as schema from "./schema-pg";

const MIGRATIONS = join(import.meta.dir, "../../drizzle-pg");

/**
 * The advisory lock key that serializes migrations at start (pg_advisory_lock, session level).
 * Any fixed 64-bit number works as long as nothing else on the server uses it: these are the
 * ASCII bytes of "cidgate\0" (0x63_69_64_67_61_74_65_00).
 */
export const MIGRATION_LOCK_KEY = 0x6369646761746500n;

/**
 * Connections per process. Most requests make one or two short queries, so a few connections
 * keep a replica busy; 10 per replica leaves PostgreSQL's default max_connections (100) room for
 * several replicas, `cidgate` commands and an operator's psql.
 */
const POOL_SIZE = 10;

/** What a store queries through: the pool's database, or a transaction on it. */
export type PgExecutor = PgDatabase<BunSQLQueryResultHKT, typeof schema, ExtractTablesWithRelations<typeof schema>>;

/** A failure at open, in one line naming the server and database, never the password. */
function openError(url: string, what: string, e: unknown): Error {
  let password = "";
  try {
    password = new URL(url).password;
  } catch {
    // not parsed: the whole URL may be a secret, so nothing of it is echoed below
  }
  // drizzle wraps a failed statement as "Failed query: <the whole SQL>" with the server's error as
  // its cause: the cause is the reason worth a line.
  const inner = e instanceof Error && e.cause instanceof Error ? e.cause : e;
  let reason = inner instanceof Error ? inner.message : String(inner);
  for (const secret of [password, password && decodeURIComponent(password), url]) {
    if (secret) reason = reason.split(secret).join("…");
  }
  const cause = inner instanceof Error && "code" in inner && inner.code ? ` (${inner.code})` : "";
  return new Error(
    `cannot ${what} the PostgreSQL database ${displayUrl(url)}: ${reason.replace(/\s+/g, " ").trim()}${cause}`,
  );
}

/** Takes the migration lock on one connection, migrates through it, unlocks. */
async function migrateOnce(sql: SQL, url: string): Promise<void> {
  let reserved: Awaited<ReturnType<SQL["reserve"]>>;
  try {
    // Connect first: a refused connection is reported as such, not as a failed migration.
    reserved = await sql.reserve();
  } catch (e) {
    throw openError(url, "connect to", e);
  }
  try {
    // One connection holds the lock and runs the migrations: drizzle's bun-sql migrator takes any
    // Bun SQL client, the reserved one included (its transaction is that connection's BEGIN). A
    // second process blocks here until the first has migrated and unlocked, then finds nothing to
    // do. The lock belongs to the session, so it also goes if this process dies mid-migration.
    await reserved`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY.toString()}::bigint)`;
    try {
      await migrate(drizzle({ client: reserved, schema }), { migrationsFolder: MIGRATIONS });
    } finally {
      await reserved`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY.toString()}::bigint)`;
    }
  } catch (e) {
    throw openError(url, "migrate", e);
  } finally {
    reserved.release();
  }
}

export async function openPg(url: string) {
  const sql = new SQL({ url, max: POOL_SIZE });
  try {
    await migrateOnce(sql, url);
  } catch (e) {
    await sql.close().catch(() => {});
    throw e;
  }

  const db = drizzle({ client: sql, schema });
  /** The transaction of the current async context, and what to run once it has committed. */
  const current = new AsyncLocalStorage<{ tx: PgExecutor; afterCommit: (() => void)[] }>();

  return {
    kind: "pg" as const,
    db,
    sql,
    /** The current transaction if the caller is inside `transaction`, else the pool. */
    q(): PgExecutor {
      return current.getStore()?.tx ?? db;
    },
    /**
     * Runs `fn` once the current transaction has committed (never if it rolls back), or at once
     * outside one: what tells this process's dispatcher a webhook event is queued, which it could
     * not see before the commit.
     */
    afterCommit(fn: () => void): void {
      const scope = current.getStore();
      if (scope) scope.afterCommit.push(fn);
      else fn();
    },
    /**
     * Runs `fn` in one transaction; every `q()` inside it (through awaits) is that transaction.
     * Committed when `fn` resolves, rolled back when it throws. A `transaction` inside another
     * joins the outer one, no savepoint: a store that makes its own transaction, called inside a
     * caller's, must commit or roll back with the caller's work as one (the outermost decides),
     * and no store catches a failure to carry on, which is all a savepoint would add, at two more
     * round trips (SAVEPOINT, RELEASE) per nested call.
     */
    async transaction<T>(fn: (tx: PgExecutor) => Promise<T>): Promise<T> {
      const outer = current.getStore();
      if (outer) return fn(outer.tx);
      const scope = { tx: db as PgExecutor, afterCommit: [] as (() => void)[] };
      const result = await db.transaction((tx) => {
        scope.tx = tx;
        return current.run(scope, () => fn(tx));
      });
      for (const after of scope.afterCommit) after();
      return result;
    },
    async close(): Promise<void> {
      await sql.close();
    },
  };
}

export type Pg = Awaited<ReturnType<typeof openPg>>;
