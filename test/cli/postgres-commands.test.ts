/**
 * The commands that open the database through withStores (src/cli/with-stores.ts)
 * answer the same on PostgreSQL as on SQLite: a shop is copied with `db copy`,
 * then `payments --csv`, `token list` and `entitlements list` print the same
 * lines with CIDGATE_DB set to either.
 */
import { afterEach, beforeEach, describe, expect, spyOn, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { command as db } from "../../src/cli/db";
import { command as entitlements } from "../../src/cli/entitlements";
import { command as payments } from "../../src/cli/payments";
import { command as token } from "../../src/cli/token";
import { createTestDatabase, pgAvailable } from "../support/postgres";
import { makeShop } from "./shop-fixture";

const available = await pgAvailable("commands on PostgreSQL");

describe.skipIf(!available)("commands on PostgreSQL", () => {
  let dir: string;
  let out: string[];
  let err: string[];
  const saved: Record<string, string | undefined> = {};
  const setEnv = (env: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(env)) {
      if (!(k in saved)) saved[k] = process.env[k];
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "cidgate-pgcli-"));
    out = [];
    err = [];
    spyOn(console, "log").mockImplementation((...a: unknown[]) => void out.push(a.join(" ")));
    spyOn(console, "error").mockImplementation((...a: unknown[]) => void err.push(a.join(" ")));
    setEnv({
      CIDGATE_CONTENT_DIR: join(dir, "content"),
      CONTENT_INDEX_DB: join(dir, "content.db"),
      CIDGATE_DATA_DIR: join(dir, "data"),
      JWT_SECRET: undefined,
    });
  });
  afterEach(() => {
    (console.log as unknown as { mockRestore(): void }).mockRestore();
    (console.error as unknown as { mockRestore(): void }).mockRestore();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
      delete saved[k];
    }
    rmSync(dir, { recursive: true, force: true });
  });

  /** What a command prints (stdout and stderr) and its exit code, with CIDGATE_DB = `database`. */
  async function run(database: string, main: () => Promise<number>) {
    setEnv({ CIDGATE_DB: database });
    out = [];
    err = [];
    const code = await main();
    return { code, out: [...out], err: [...err] };
  }

  test("payments, token list and entitlements list print the same from SQLite and from its copy", async () => {
    const sqlite = join(dir, "shop.db");
    makeShop(sqlite, join(dir, "content"));
    const url = await createTestDatabase();
    expect((await run(sqlite, () => db.main(["copy", "--to", url]))).code).toBe(0);

    const commands: [string, () => Promise<number>][] = [
      ["payments --csv", () => payments.main(["--csv", "--days", "2"])],
      ["payments", () => payments.main(["list", "--days", "2"])],
      ["token list", () => token.main(["list"])],
      ["entitlements list", () => entitlements.main(["list"])],
    ];
    for (const [name, main] of commands) {
      const fromSqlite = await run(sqlite, main);
      const fromPg = await run(url, main);
      expect({ name, ...fromPg }).toEqual({ name, ...fromSqlite });
      expect({ name, code: fromSqlite.code, lines: fromSqlite.out.length > 0 }).toEqual({ name, code: 0, lines: true });
    }
  }, 60_000);
});
