/**
 * A database made before entitlements (only 0000_init applied, with rows in
 * it) opens with the current code: the migration adds the access columns with
 * their defaults and the entitlements table, and the rows stay.
 */
import { Database } from "bun:sqlite";
import { afterEach, beforeEach, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { openDb } from "../../src/db/client";
import { createStores } from "../../src/stores";

const DRIZZLE = join(import.meta.dir, "../../drizzle");
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cidgate-migrate-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test("an existing database migrates cleanly: access defaults on old rows, entitlements usable", () => {
  // The migrations folder as it was before this one: 0000 only.
  const old = join(dir, "drizzle");
  mkdirSync(join(old, "meta"), { recursive: true });
  copyFileSync(join(DRIZZLE, "0000_init.sql"), join(old, "0000_init.sql"));
  const journal = JSON.parse(readFileSync(join(DRIZZLE, "meta/_journal.json"), "utf8"));
  journal.entries = journal.entries.filter((e: { tag: string }) => e.tag === "0000_init");
  writeFileSync(join(old, "meta/_journal.json"), JSON.stringify(journal));

  const path = join(dir, "cidgate.db");
  const sqlite = new Database(path, { create: true });
  migrate(drizzle(sqlite), { migrationsFolder: old });
  const id = "0190a000-0000-7000-8000-000000000001";
  sqlite.run(
    `INSERT INTO payment_instructions (id, version, name, requirements, source, created_at, updated_at)
     VALUES (?, 3, 'Old', '[]', 'api', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`,
    [id],
  );
  sqlite.close();

  const db = openDb(path);
  try {
    const stores = createStores(db, { contentDir: join(dir, "content") });
    expect(stores.instructions.get(id)).toMatchObject({
      version: 3,
      name: "Old",
      access: "forever",
      access_scope: "cid",
    });
    const e = stores.entitlements.grant({ payer: "0x1111111111111111111111111111111111111111", instructionId: id }, 1);
    expect(stores.entitlements.active("0x1111111111111111111111111111111111111111", "x", id, 2)?.id).toBe(e.id);
  } finally {
    db.sqlite.close();
  }
});
