/**
 * The copy openDb takes before migrating a database that has tables, and
 * restore's refusals (nothing changed).
 */
import { Database } from "bun:sqlite";
import { afterEach, beforeEach, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { BackupError, restoreDatabase } from "../../src/db/backup";
import { openDb } from "../../src/db/client";

const DRIZZLE = join(import.meta.dir, "../../drizzle");
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cidgate-backup-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const backups = () => readdirSync(dir).filter((f) => f.includes(".before-migration-"));

/** A database as the first release left it: 0000_init applied, one instruction in it. */
function oldDatabase(path: string) {
  const old = join(dir, "drizzle-0000");
  mkdirSync(join(old, "meta"), { recursive: true });
  copyFileSync(join(DRIZZLE, "0000_init.sql"), join(old, "0000_init.sql"));
  const journal = JSON.parse(readFileSync(join(DRIZZLE, "meta/_journal.json"), "utf8"));
  journal.entries = journal.entries.filter((e: { tag: string }) => e.tag === "0000_init");
  writeFileSync(join(old, "meta/_journal.json"), JSON.stringify(journal));
  const sqlite = new Database(path, { create: true });
  migrate(drizzle(sqlite), { migrationsFolder: old });
  sqlite.run(
    `INSERT INTO payment_instructions (id, version, name, requirements, source, created_at, updated_at)
     VALUES ('0190a000-0000-7000-8000-000000000001', 1, 'Old', '[]', 'api', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`,
  );
  sqlite.close();
}

test("a database with a pending migration is backed up first; the copy is the old schema with its rows", () => {
  const path = join(dir, "cidgate.db");
  oldDatabase(path);
  openDb(path).sqlite.close();
  expect(backups()).toHaveLength(1);
  const copy = new Database(join(dir, backups()[0]), { readonly: true });
  expect(copy.query("SELECT name FROM payment_instructions").all()).toEqual([{ name: "Old" }]);
  // the old schema: no entitlements table yet
  expect(copy.query("SELECT name FROM sqlite_master WHERE name = 'entitlements'").get()).toBeNull();
  copy.close();
  // opened again, nothing pending: no second copy
  openDb(path).sqlite.close();
  expect(backups()).toHaveLength(1);
});

test("a new database is not backed up", () => {
  openDb(join(dir, "fresh.db")).sqlite.close();
  openDb(join(dir, "fresh.db")).sqlite.close();
  expect(backups()).toEqual([]);
});

test("the before-migration copy restores into the migrated database", () => {
  const path = join(dir, "cidgate.db");
  oldDatabase(path);
  const db = openDb(path);
  db.sqlite.run("UPDATE payment_instructions SET name = 'Changed after the upgrade'");
  const counts = restoreDatabase(db.sqlite, join(dir, backups()[0]), (p) =>
    openDb(p, { backupBeforeMigration: false }).sqlite.close(),
  );
  expect(counts.payment_instructions).toBe(1);
  expect(db.sqlite.query("SELECT name, access FROM payment_instructions").all()).toEqual([
    { name: "Old", access: "forever" },
  ]);
  db.sqlite.close();
});

test("restore refuses a file that is not a cidgate database, and changes nothing", () => {
  const db = openDb(join(dir, "live.db"));
  db.sqlite.run(
    `INSERT INTO payment_instructions (id, version, name, requirements, source, created_at, updated_at)
     VALUES ('0190a000-0000-7000-8000-000000000002', 1, 'Live', '[]', 'api', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`,
  );
  writeFileSync(join(dir, "junk.db"), "not sqlite at all, just text that is long enough to look like a file");
  const other = new Database(join(dir, "other.db"), { create: true });
  other.run("CREATE TABLE notes (x TEXT)");
  other.close();
  const migrateCopy = (p: string) => openDb(p, { backupBeforeMigration: false }).sqlite.close();
  expect(() => restoreDatabase(db.sqlite, join(dir, "junk.db"), migrateCopy)).toThrow(BackupError);
  expect(() => restoreDatabase(db.sqlite, join(dir, "other.db"), migrateCopy)).toThrow("not a cidgate database");
  expect(() => restoreDatabase(db.sqlite, join(dir, "missing.db"), migrateCopy)).toThrow("does not exist");
  expect(db.sqlite.query("SELECT name FROM payment_instructions").all()).toEqual([{ name: "Live" }]);
  db.sqlite.close();
});
