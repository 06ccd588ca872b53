/**
 * Backups of the SQLite file, consistent while the server takes payments.
 *
 * `backupDatabase` is `VACUUM INTO`: one read transaction over the live file
 * (WAL: writers carry on meanwhile), written to a new compact file, so the
 * copy holds exactly the commits before it began, never half a settlement.
 * Written beside the target under a temp name, then renamed: a crash leaves no
 * half-written backup under the real name.
 *
 * `restoreDatabase` is logical: the backup (migrated to this version's
 * schema on a private copy) replaces every row of the live database in one
 * transaction. The file and its inode stay, so a server that has it open sees
 * the restore as one more commit by another process (its catalog notices
 * through `data_version`) instead of writing on into a replaced file.
 *
 * `backupBeforeMigration` is the copy openDb (client.ts) takes when a
 * database with tables is about to be migrated.
 */
import { Database } from "bun:sqlite";
import { accessSync, chmodSync, constants, copyFileSync, existsSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { readMigrationFiles } from "drizzle-orm/migrator";

/** bun:sqlite has no backup API; a string literal is what VACUUM INTO takes. */
const quoted = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** Writes a consistent copy of the open database `sqlite` to `target` (which must not exist). Mode 0600: it holds the ledger. */
export function backupDatabase(sqlite: Database, target: string): void {
  if (existsSync(target)) throw new BackupError(`${basename(target)} exists already; give a new file name`);
  // The reasons name the file as given, never the absolute path SQLite or the system would print.
  const folder = dirname(target);
  if (!existsSync(folder))
    throw new BackupError(`cannot write ${basename(target)}: its folder ${basename(folder)} does not exist`);
  if (!statSync(folder).isDirectory())
    throw new BackupError(`cannot write ${basename(target)}: ${basename(folder)} is not a folder`);
  const temp = join(folder, `.${basename(target)}.${process.pid}.tmp`);
  try {
    rmSync(temp, { force: true });
    sqlite.exec(`VACUUM INTO ${quoted(temp)}`);
    chmodSync(temp, 0o600);
    renameSync(temp, target);
  } catch (e) {
    throw new BackupError(`cannot write ${basename(target)}: ${writeFailure(e, folder)}`);
  } finally {
    rmSync(temp, { force: true });
  }
}

export class BackupError extends Error {}

/** Why a file could not be written in `folder`, in words without the absolute paths SQLite's messages carry. */
function writeFailure(e: unknown, folder: string): string {
  const code = (e as { code?: unknown }).code;
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (code === "SQLITE_FULL" || code === "ENOSPC") return "the disk is full";
  if (code === "SQLITE_CANTOPEN") {
    try {
      accessSync(folder, constants.W_OK);
    } catch {
      return "permission denied";
    }
    return "cannot create a file there";
  }
  return (e as Error).message.replace(/\/\S*/g, "").trim();
}

/** "ok", or the first problems `PRAGMA integrity_check` names. */
export function integrityCheck(sqlite: Database): string {
  const rows = sqlite.query<{ integrity_check: string }, []>("PRAGMA integrity_check").all();
  return rows.map((r) => r.integrity_check).join("; ");
}

/** The user tables of a database, in creation order (drizzle's own and SQLite's left out). */
function userTables(sqlite: Database, schema = "main"): string[] {
  return sqlite
    .query<{ name: string }, []>(
      `SELECT name FROM ${schema}.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '__drizzle_migrations' ORDER BY rowid`,
    )
    .all()
    .map((r) => r.name);
}

/**
 * Throws a BackupError unless `source` is an intact cidgate database
 * (integrity_check, a payments table). Cheap next to a restore: `cidgate
 * restore` asks it before copying the live database aside.
 */
export function checkBackup(source: string): void {
  if (!existsSync(source)) throw new BackupError(`${basename(source)} does not exist`);
  let check: Database;
  try {
    check = new Database(source, { readonly: true });
  } catch {
    throw new BackupError(`${basename(source)} is not a SQLite database`);
  }
  try {
    const integrity = integrityCheck(check);
    if (integrity !== "ok") throw new BackupError(`${basename(source)} fails integrity_check: ${integrity}`);
    if (!userTables(check).includes("payments")) throw new BackupError(`${basename(source)} is not a cidgate database`);
  } catch (e) {
    if (e instanceof BackupError) throw e;
    throw new BackupError(`${basename(source)} is not a SQLite database`);
  } finally {
    check.close();
  }
}

/**
 * Replaces every row of `live` (an open, migrated cidgate database) with the
 * rows of the backup file `source`. The backup is checked first
 * (integrity_check, a cidgate database) and migrated on a private copy by
 * `migrate`, so a backup from an older version restores into this one.
 * Returns the row count per table.
 */
export function restoreDatabase(
  live: Database,
  source: string,
  migrate: (path: string) => void,
): Record<string, number> {
  checkBackup(source);
  const copy = join(dirname(live.filename || source), `.restore-${process.pid}-${Date.now()}.db`);
  try {
    copyFileSync(source, copy);
    migrate(copy);

    const counts: Record<string, number> = {};
    // Foreign keys are checked once at the end: rows go in table by table, not in dependency order.
    live.exec("PRAGMA foreign_keys = OFF");
    live.exec(`ATTACH DATABASE ${quoted(copy)} AS restored`);
    try {
      live.transaction(() => {
        const theirs = new Set(userTables(live, "restored"));
        for (const table of userTables(live)) {
          live.exec(`DELETE FROM main."${table}"`);
          if (!theirs.has(table)) continue;
          const columns = live
            .query<{ name: string }, []>(`SELECT name FROM pragma_table_info('${table}', 'restored')`)
            .all()
            .map((c) => `"${c.name}"`)
            .join(", ");
          live.exec(`INSERT INTO main."${table}" (${columns}) SELECT ${columns} FROM restored."${table}"`);
          counts[table] = live.query<{ n: number }, []>(`SELECT count(*) AS n FROM main."${table}"`).get()!.n;
        }
        // AUTOINCREMENT counters, so new rows never reuse an id the backup had.
        const hasSequence = (schema: string) =>
          live.query(`SELECT 1 FROM ${schema}.sqlite_master WHERE name = 'sqlite_sequence'`).get() !== null;
        if (hasSequence("main") && hasSequence("restored")) {
          live.exec("DELETE FROM main.sqlite_sequence");
          live.exec("INSERT INTO main.sqlite_sequence (name, seq) SELECT name, seq FROM restored.sqlite_sequence");
        }
        const broken = live.query("PRAGMA foreign_key_check").all();
        if (broken.length > 0) throw new BackupError(`the backup's rows break ${broken.length} foreign keys`);
      })();
    } finally {
      live.exec("DETACH DATABASE restored");
      live.exec("PRAGMA foreign_keys = ON");
    }
    return counts;
  } finally {
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${copy}${suffix}`, { force: true });
  }
}

/**
 * Before openDb migrates a database that has tables: which migrations are
 * pending (drizzle applies those newer than the last recorded one), and if
 * any, a backup beside the file, `<db>.before-migration-<UTC time>.bak`.
 * Returns the backup's path, or undefined when none was needed.
 */
export function backupBeforeMigration(sqlite: Database, path: string, migrationsFolder: string): string | undefined {
  if (path === ":memory:" || userTables(sqlite).length === 0) return undefined;
  const hasJournal =
    sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get() !== null;
  const last = hasJournal
    ? sqlite
        .query<{ created_at: number }, []>(
          "SELECT created_at FROM __drizzle_migrations ORDER BY created_at DESC LIMIT 1",
        )
        .get()
    : null;
  const pending = readMigrationFiles({ migrationsFolder }).filter(
    (m) => !last || Number(last.created_at) < m.folderMillis,
  );
  if (pending.length === 0) return undefined;
  const stamp = new Date()
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  const target = `${path}.before-migration-${stamp}.bak`;
  // Two processes starting together (server and CLI) may both get here: the same second's copy is as good.
  try {
    backupDatabase(sqlite, target);
  } catch (e) {
    // Only "exists already" is the other process's copy; a copy that cannot be written stops the migration.
    if (!(e instanceof BackupError && existsSync(target))) throw e;
  }
  return target;
}
