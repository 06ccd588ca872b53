/**
 * Opens the SQLite database (WAL, foreign keys) and applies the drizzle
 * migrations in drizzle/ at start, so a fresh file and `:memory:` both work.
 * The folder is made 0700 and the file 0600 before SQLite opens it (the WAL
 * and SHM take the database's mode); wider existing modes are tightened with
 * a warning (private-files.ts).
 * A database with tables and a migration pending is first backed up beside
 * itself (backup.ts): an upgrade can always be undone with `cidgate restore`.
 */
import { Database } from "bun:sqlite";
import { basename, dirname, join } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import { ensurePrivateDir, ensurePrivateFile, tightenPrivateFile, type Warn } from "../private-files";
import { backupBeforeMigration } from "./backup";
import * as schema from "./schema";

const MIGRATIONS = join(import.meta.dir, "../../drizzle");

export function openDb(path: string, options: { backupBeforeMigration?: boolean; warn?: Warn } = {}) {
  const onDisk = path !== ":memory:" && path !== "";
  if (onDisk) {
    ensurePrivateDir(dirname(path), "the database folder", options.warn, [basename(path)]);
    ensurePrivateFile(path, options.warn);
    // Left by an earlier run with wider modes (SQLite keeps an existing file's mode).
    for (const suffix of ["-wal", "-shm"]) tightenPrivateFile(path + suffix, options.warn);
  }
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA synchronous = NORMAL");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  const db = drizzle(sqlite, { schema });
  const backup = options.backupBeforeMigration === false ? undefined : backupBeforeMigration(sqlite, path, MIGRATIONS);
  if (backup) console.error(`cidgate: backed up the database to ${backup} before migrating it`);
  migrate(db, { migrationsFolder: MIGRATIONS });
  return Object.assign(db, { sqlite });
}

export type Db = ReturnType<typeof openDb>;

/**
 * The database or a transaction on it: what a query helper takes when it
 * runs both on its own and inside `db.transaction((tx) => ...)`. Synchronous
 * ("sync") because bun:sqlite rolls back only a synchronous callback: an
 * async one has committed before its first await returns.
 */
export type DbOrTx = BaseSQLiteDatabase<"sync", void, typeof schema>;
