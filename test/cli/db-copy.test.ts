/**
 * `cidgate db copy --to postgres://...` (src/cli/db.ts, db-copy.ts) against a
 * real PostgreSQL: a SQLite shop with a row in every table is copied, and
 * every table reads back row for row with the same JS values; the sequences
 * are moved past the copied ids; the source file is untouched; a second copy
 * and a copy into a database with rows are refused with nothing written; a
 * copy that does not verify is rolled back. No output carries the password.
 */
import { Database } from "bun:sqlite";
import { afterAll, afterEach, beforeEach, describe, expect, spyOn, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { asc, getTableColumns } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { getTableConfig as getPgConfig, type PgTable } from "drizzle-orm/pg-core";
import { getTableConfig as getSqliteConfig, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { command } from "../../src/cli/db";
import { checkSource, copyPlan } from "../../src/cli/db-copy";
import { openDb } from "../../src/db/client";
import { openPg, type Pg } from "../../src/db/pg";
import * as sqliteSchema from "../../src/db/schema";
import { createTestDatabase, pgAvailable } from "../support/postgres";
import { CID_A, MAINNET_USDC, makeShop, PAYER, SELLER, USDC } from "./shop-fixture";

/** A table's primary-key columns (json columns cannot be ordered by on PostgreSQL). */
function keyOf<T extends SQLiteTable | PgTable>(t: T, config: { primaryKeys: { columns: unknown[] }[] }) {
  const own = Object.values(getTableColumns(t)).filter((c) => c.primary);
  return (own.length > 0 ? own : config.primaryKeys[0].columns).map((c) => asc(c as never));
}

/** Every row of every copied table, in primary-key order: SQLite's through schema.ts, PostgreSQL's through schema-pg.ts. */
async function allRows(path: string, pg: Pg) {
  const sqlite = new Database(path, { readonly: true });
  const src = drizzle(sqlite, { schema: sqliteSchema });
  const out: Record<string, { sqlite: unknown[]; postgres: unknown[] }> = {};
  for (const t of copyPlan()) {
    out[t.name] = {
      sqlite: src
        .select()
        .from(t.sqlite)
        .orderBy(...keyOf(t.sqlite, getSqliteConfig(t.sqlite)))
        .all(),
      postgres: await pg.db
        .select()
        .from(t.pg)
        .orderBy(...keyOf(t.pg, getPgConfig(t.pg))),
    };
  }
  sqlite.close();
  return out;
}

const available = await pgAvailable("db copy");

describe.skipIf(!available)("cidgate db copy", () => {
  let dir: string;
  let out: string[];
  let err: string[];
  const saved: Record<string, string | undefined> = {};
  const opened: Pg[] = [];
  const open = async (url: string) => {
    const pg = await openPg(url);
    opened.push(pg);
    return pg;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "cidgate-dbcopy-"));
    out = [];
    err = [];
    spyOn(console, "log").mockImplementation((...a: unknown[]) => void out.push(a.join(" ")));
    spyOn(console, "error").mockImplementation((...a: unknown[]) => void err.push(a.join(" ")));
    const env = { CIDGATE_DB: join(dir, "shop.db"), CIDGATE_CONTENT_DIR: join(dir, "content") };
    for (const [k, v] of Object.entries(env)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  });
  afterEach(() => {
    (console.log as unknown as { mockRestore(): void }).mockRestore();
    (console.error as unknown as { mockRestore(): void }).mockRestore();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  afterAll(async () => {
    for (const pg of opened) await pg.close();
  });

  const copy = (url: string) => command.main(["copy", "--to", url]);
  const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

  test("every table arrives row for row; sequences move past the ids; the source is untouched", async () => {
    const path = join(dir, "shop.db");
    makeShop(path, join(dir, "content"));
    const before = sha(path);
    const url = await createTestDatabase();

    expect(await copy(url)).toBe(0);
    expect(err).toEqual([]);
    expect(sha(path)).toBe(before);

    const pg = await open(url);
    const rows = await allRows(path, pg);
    for (const [table, { sqlite, postgres }] of Object.entries(rows)) {
      expect({ table, rows: postgres }).toEqual({ table, rows: sqlite });
      // Every table of the plan had something to copy: the test covers each.
      expect({ table, copied: sqlite.length > 0 }).toEqual({ table, copied: true });
    }
    expect(rows.payments.sqlite.map((p) => (p as { state: string }).state).sort()).toEqual([
      "failed",
      "pending",
      "settled",
      "settled",
      "settled",
      "settled",
    ]);

    // The printed verification: each table with both counts, and the settled sums, exact.
    const printed = out.join("\n");
    expect(printed).toMatch(/^\s+payments\s+6\s+6\s+ok$/m);
    expect(printed).toMatch(/^\s+sales_totals\s+\d+\s+\d+\s+ok$/m);
    expect(printed).toMatch(
      new RegExp(
        `^\\s+base\\s+${MAINNET_USDC}\\s+1\\s+1\\s+123456789012345678901\\s+123456789012345678901\\s+ok$`,
        "m",
      ),
    );
    expect(printed).toMatch(new RegExp(`^\\s+base-sepolia\\s+${USDC}\\s+3\\s+3\\s+22350\\s+22350\\s+ok$`, "m"));

    // The next row of each identity table takes max(id) + 1.
    const next = async (table: string, insert: string) => {
      const [{ max }] = await pg.sql.unsafe(`SELECT max(id)::int AS max FROM ${table}`);
      const [{ id }] = await pg.sql.unsafe(`${insert} RETURNING id::int AS id`);
      return [id, max + 1];
    };
    const [pid, pwant] = await next(
      "payments",
      `INSERT INTO payments (network, asset, payer, nonce, cid, instruction_id, instruction_version, amount, pay_to, state,
       valid_before, x402_version, proof_hash, created_at, updated_at)
       VALUES ('base-sepolia', '${USDC}', '${PAYER}', '0xnew', '${CID_A}', 'x', 1, '1', '${SELLER}', 'pending', 0, 2, 'h', 't', 't')`,
    );
    expect(pid).toBe(pwant);
    const [eid, ewant] = await next(
      "entitlements",
      `INSERT INTO entitlements (payer, scope, cid, instruction_id, source, granted_at) VALUES ('${PAYER}', 'cid', '${CID_A}', 'x', 'grant', 't')`,
    );
    expect(eid).toBe(ewant);
    const [did, dwant] = await next(
      "webhook_deliveries",
      `INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, payload, state, next_attempt_at, created_at)
       VALUES ('wh_x', 'ev_new', 't', '{}', 'pending', 't', 't')`,
    );
    expect(did).toBe(dwant);
    const [rid, rwant] = await next(
      "payment_resolutions",
      `INSERT INTO payment_resolutions (payment_id, action, outcome, basis, actor, created_at) VALUES (1, 'check', 'pending', 'chain', 'a', 't')`,
    );
    expect(rid).toBe(rwant);

    // The rollup triggers are on again after the copy: a new settled sale counts once.
    const [{ sales: salesBefore }] = await pg.sql`SELECT sum(sales)::int AS sales FROM sales_totals`;
    await pg.sql`UPDATE payments SET state = 'settled' WHERE id = ${pid}`;
    const [{ sales: salesAfter }] = await pg.sql`SELECT sum(sales)::int AS sales FROM sales_totals`;
    expect(salesAfter).toBe(salesBefore + 1);

    // A second copy into the same database: refused, one line, nothing added.
    out = [];
    err = [];
    const countsBefore =
      await pg.sql`SELECT (SELECT count(*) FROM payments)::int AS p, (SELECT count(*) FROM cid_mappings)::int AS m`;
    expect(await copy(url)).toBe(1);
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(
      /^cidgate db copy: the target database is not empty \(.*payments 7.*\).*nothing was written$/,
    );
    expect(
      await pg.sql`SELECT (SELECT count(*) FROM payments)::int AS p, (SELECT count(*) FROM cid_mappings)::int AS m`,
    ).toEqual(countsBefore);
  }, 60_000);

  test("a target with an instruction already is refused, and nothing is written", async () => {
    makeShop(join(dir, "shop.db"), join(dir, "content"));
    const url = await createTestDatabase();
    const pg = await open(url);
    await pg.sql`INSERT INTO payment_instructions (id, name, requirements, created_at, updated_at)
      VALUES ('0190a000-0000-7000-8000-000000000009', 'Already here', ${[]}::json, 't', 't')`;
    expect(await copy(url)).toBe(1);
    expect(err).toEqual([
      "cidgate db copy: the target database is not empty (payment_instructions 1); db copy fills an empty one; nothing was written",
    ]);
    for (const t of copyPlan()) {
      const [{ n }] = await pg.sql.unsafe(`SELECT count(*)::int AS n FROM "${t.name}"`);
      expect({ table: t.name, n }).toEqual({ table: t.name, n: t.name === "payment_instructions" ? 1 : 0 });
    }
  }, 60_000);

  test("a copy that does not verify is rolled back whole, exit 1, the difference shown", async () => {
    makeShop(join(dir, "shop.db"), join(dir, "content"));
    const url = await createTestDatabase();
    const pg = await open(url);
    // The fault: the target silently drops one row on its way in (a BEFORE INSERT trigger answering NULL).
    await pg.sql.unsafe(`
      CREATE FUNCTION drop_one_nonce() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.nonce = 'nonce-two' THEN RETURN NULL; END IF; RETURN NEW; END $$;
      CREATE TRIGGER drop_one_nonce BEFORE INSERT ON siwx_nonces FOR EACH ROW EXECUTE FUNCTION drop_one_nonce();`);
    expect(await copy(url)).toBe(1);
    expect(out.join("\n")).toMatch(/^\s+siwx_nonces\s+2\s+1\s+DIFFERS$/m);
    expect(err).toEqual([
      "cidgate db copy: the copy differs from its source (above); rolled back, nothing was written",
    ]);
    for (const t of copyPlan()) {
      const [{ n }] = await pg.sql.unsafe(`SELECT count(*)::int AS n FROM "${t.name}"`);
      expect({ table: t.name, n }).toEqual({ table: t.name, n: 0 });
    }
  }, 60_000);

  test("no password in any line, whether the copy works or the server refuses the login", async () => {
    makeShop(join(dir, "shop.db"), join(dir, "content"));
    const url = new URL(await createTestDatabase());
    // A role with a password; the test server trusts loopback, so any password logs in.
    const admin = new SQL({ url: url.toString(), max: 1 });
    await admin.unsafe(`CREATE ROLE copier LOGIN SUPERUSER PASSWORD 'hunter2-secret'`).catch(() => {});
    await admin.close();
    url.username = "copier";
    url.password = "hunter2-secret";
    expect(await copy(url.toString())).toBe(0);
    url.username = "nobody_at_all";
    expect(await copy(url.toString())).toBe(1);
    const all = [...out, ...err].join("\n");
    expect(all).toContain("…@127.0.0.1");
    expect(all).not.toContain("hunter2");
    expect(err.at(-1)).toMatch(
      /^cidgate db copy: cannot connect to the PostgreSQL database postgres:\/\/…@127\.0\.0\.1:\d+\/\w+: /,
    );
  }, 60_000);

  test("refusals before anything is opened: no --to, a non-PostgreSQL --to, CIDGATE_DB missing", async () => {
    expect(await command.main(["copy"])).toBe(2);
    expect(err.at(-1)).toContain("--to is required");
    expect(await copy("/tmp/other.db")).toBe(2);
    expect(err.at(-1)).toContain("--to must be a postgres:// or postgresql:// URL");
    expect(await copy("postgres://127.0.0.1:1/x")).toBe(1);
    expect(err.at(-1)).toBe(`cidgate db copy: no database at CIDGATE_DB (${join(dir, "shop.db")})`);
  });
});

test("checkSource: a shop at this version passes; one left by an older or a newer cidgate is refused", () => {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-dbsource-"));
  try {
    const path = join(dir, "shop.db");
    openDb(path).sqlite.close();
    const sqlite = new Database(path);
    expect(() => checkSource(sqlite)).not.toThrow();
    const [{ at }] = sqlite.query<{ at: number }, []>("SELECT max(created_at) AS at FROM __drizzle_migrations").all();
    sqlite.run("UPDATE __drizzle_migrations SET created_at = ? WHERE created_at = ?", [at + 1, at]);
    expect(() => checkSource(sqlite)).toThrow("CIDGATE_DB was migrated by a newer cidgate: copy it with that version");
    sqlite.run("DELETE FROM __drizzle_migrations WHERE created_at = ?", [at + 1]);
    expect(() => checkSource(sqlite)).toThrow("CIDGATE_DB was last opened by an older cidgate");
    sqlite.close();
    const other = new Database(join(dir, "other.db"));
    expect(() => checkSource(other)).toThrow("CIDGATE_DB is not a cidgate database");
    other.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// The plan itself, without a server: every table the two schemas share, in an order the foreign keys accept.
test("db copy's plan: every shared table but content_files, parents first", () => {
  const names = copyPlan().map((t) => t.name);
  expect(names).not.toContain("content_files");
  expect(names).not.toContain("leases");
  expect(names).not.toContain("catalog_generation");
  expect(names.indexOf("payment_instructions")).toBeLessThan(names.indexOf("cid_mappings"));
  expect(names.indexOf("payments")).toBeLessThan(names.indexOf("entitlements"));
  expect(new Set(names).size).toBe(16);
});
