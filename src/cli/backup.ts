/**
 * `cidgate backup <file>` and `cidgate restore <file>` (db/backup.ts).
 * Backup is safe while the server takes payments: one read transaction,
 * the copy holds every commit before it began. Restore replaces every row
 * of CIDGATE_DB with the backup's in one transaction, after checking it.
 */
import { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { BackupError, backupDatabase, checkBackup, integrityCheck, restoreDatabase } from "../db/backup";
import { openDb } from "../db/client";
import { loadSettingsOrReport, type Settings, selectsPostgres } from "../settings";
import { defineCommand } from "./command";
import { missingDatabase } from "./existing-db";

/**
 * backup and restore copy a SQLite file; a PostgreSQL database is backed up by PostgreSQL's own
 * tools, which copy a live database consistently and restore into any server. True (after one
 * line) when CIDGATE_DB is PostgreSQL.
 */
function refusesPostgres(who: string, settings: Settings, tool: "pg_dump" | "pg_restore"): boolean {
  if (!selectsPostgres(settings.db)) return false;
  console.error(
    `${who}: CIDGATE_DB is PostgreSQL; use ${tool === "pg_dump" ? "pg_dump -Fc" : "pg_restore"} instead (docs/scaling.md#backups)`,
  );
  return true;
}

export const backup = defineCommand({
  name: "backup",
  summary: "copy the database to a new file, consistent while the server runs",
  arguments: [{ name: "file", description: "where to write the copy (must not exist)" }],
  notes:
    "SQLite's VACUUM INTO from CIDGATE_DB: every payment settled before the backup began is in it. The file is " +
    "mode 0600 (it holds the ledger). Copy it off the machine; `cidgate restore <file>` brings it back.",
  async run({ positionals: [file], who }) {
    const settings = loadSettingsOrReport(who);
    if (!settings) return 2;
    if (refusesPostgres(who, settings, "pg_dump")) return 1;
    if (missingDatabase(who, settings.db)) return 1;
    // Not openDb: a backup never migrates the database it copies.
    const sqlite = new Database(settings.db);
    try {
      sqlite.exec("PRAGMA busy_timeout = 5000");
      backupDatabase(sqlite, file);
      const copy = new Database(file, { readonly: true });
      const integrity = integrityCheck(copy);
      copy.close();
      if (integrity !== "ok") {
        console.error(`${who}: the copy fails integrity_check: ${integrity}`);
        return 1;
      }
      console.log(`backed up ${settings.db} to ${file}`);
      return 0;
    } catch (e) {
      if (!(e instanceof BackupError)) throw e;
      console.error(`${who}: ${e.message}`);
      return 1;
    } finally {
      sqlite.close();
    }
  },
});

export const restore = defineCommand({
  name: "restore",
  summary: "replace the database's contents with a backup's",
  arguments: [{ name: "file", description: "a file written by cidgate backup (or a before-migration copy)" }],
  notes:
    "Checks the backup (integrity_check, a cidgate database), migrates a copy of it to this version, then " +
    "replaces every row of CIDGATE_DB in one transaction; what was there is first backed up beside it as " +
    "<db>.before-restore-<time>.bak. A running server sees the restored rows at once; restarting it is still " +
    "the tidy way (its content index is rebuilt from the files on start).",
  async run({ positionals: [file], who }) {
    const settings = loadSettingsOrReport(who);
    if (!settings) return 2;
    if (refusesPostgres(who, settings, "pg_restore")) return 1;
    if (settings.db === ":memory:") {
      console.error(`${who}: CIDGATE_DB is :memory:; restore into a file`);
      return 1;
    }
    if (!existsSync(file)) {
      console.error(`${who}: ${file} does not exist`);
      return 1;
    }
    // The backup is checked before anything is copied or opened: a junk file changes nothing, not even the folder.
    try {
      checkBackup(file);
    } catch (e) {
      if (!(e instanceof BackupError)) throw e;
      console.error(`${who}: ${e.message}; nothing changed`);
      return 1;
    }
    const db = openDb(settings.db);
    try {
      const stamp = new Date()
        .toISOString()
        .replace(/[-:]/g, "")
        .replace(/\.\d+Z$/, "Z");
      const before = `${settings.db}.before-restore-${stamp}.bak`;
      backupDatabase(db.sqlite, before);
      const counts = restoreDatabase(db.sqlite, file, (path) =>
        openDb(path, { backupBeforeMigration: false }).sqlite.close(),
      );
      const summary = Object.entries(counts)
        .map(([table, n]) => `${table} ${n}`)
        .join(", ");
      console.log(`restored ${file} into ${settings.db} (${summary}); the previous contents are in ${before}`);
      return 0;
    } catch (e) {
      if (!(e instanceof BackupError)) throw e;
      console.error(`${who}: ${e.message}; nothing changed`);
      return 1;
    } finally {
      db.sqlite.close();
    }
  },
});

export const command = backup;
