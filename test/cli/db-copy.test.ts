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
import { copyPlan } from "../../src/cli/db-copy";
import { openDb } from "../../src/db/client";
import { openPg, type Pg } from "../../src/db/pg";
import * as sqliteSchema from "../../src/db/schema";
import { createFunnelCounters } from "../../src/stats/counters";
import { createStores } from "../../src/stores";
import { createTestDatabase, pgAvailable } from "../support/postgres";

const PAYER = "0x1111111111111111111111111111111111111111";
const OTHER = "0x2222222222222222222222222222222222222222";
const SELLER = "0x3333333333333333333333333333333333333333";
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const MAINNET_USDC = "0x833589fCD6eDb6E08f4c7C32D4c71b54bdA02913";
const CID_A = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
const CID_B = "bafkreidvbhs33ighmljlvr7zbv2ywwzcmp5adtf4kqvlly67cy56bdtmve";
const CID_C = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku";

/**
 * A shop that has lived a little: every table of copyPlan() gets rows, through the stores where
 * they write them (the rollups by the ledger's triggers, the funnel by its counters).
 */
function makeShop(path: string, contentDir: string) {
  const db = openDb(path);
  const stores = createStores(db, { contentDir });
  const now = Math.floor(Date.now() / 1000);
  const a = stores.instructions.create({
    name: "Report",
    description: "a PDF",
    requirements: [
      { network: "base-sepolia", asset: USDC, pay_to: SELLER, amount: "10000" },
      { network: "base", asset: MAINNET_USDC, pay_to: SELLER, amount: "20000" },
    ],
  });
  const b = stores.instructions.create({
    name: "Bundle",
    requirements: [{ network: "base-sepolia", asset: USDC, pay_to: SELLER, amount: "5" }],
    access: "30d",
    access_scope: "instruction",
  });
  stores.instructions.attachCid(a.id, CID_A);
  stores.instructions.attachCid(b.id, CID_B);
  stores.instructions.attachCid(b.id, CID_C);
  const hook = stores.notifications.createWebhook({ url: "https://hooks.example.com/a", secret: "s".repeat(32) });
  stores.notifications.createWebhook({
    url: "https://hooks.example.com/b",
    events: ["payment.settled", "entitlement.revoked"],
    description: "accounting",
    enabled: false,
  });

  let nonce = 0;
  const claim = (over: { network?: string; asset?: string; amount?: string; cid?: string; payer?: string } = {}) => {
    const result = stores.payments.claim({
      network: over.network ?? "base-sepolia",
      asset: over.asset ?? USDC,
      payer: over.payer ?? PAYER,
      nonce: `0x${(++nonce).toString(16).padStart(64, "0")}`,
      cid: over.cid ?? CID_A,
      instructionId: over.cid === CID_B ? b.id : a.id,
      instructionVersion: 1,
      amount: over.amount ?? "10000",
      payTo: SELLER,
      validBefore: BigInt(now + 600),
      x402Version: 2,
      proofHash: `hash-${nonce}`,
    });
    if (!result.claimed) throw new Error("not claimed");
    return result.payment;
  };
  const tx = (n: number) => `0x${n.toString(16).padStart(64, "a")}`;
  const settled = [claim(), claim({ amount: "12345" }), claim({ cid: CID_B, amount: "5", payer: OTHER })];
  // Of 16 digits or more: counted in the rollups' `oversized`, summed exactly by the verification.
  settled.push(claim({ network: "base", asset: MAINNET_USDC, amount: "123456789012345678901" }));
  for (const [i, p] of settled.entries()) {
    stores.payments.markSettled(p.id, tx(i + 1));
    stores.entitlements.grantForPayment({
      payer: p.payer,
      cid: p.cid,
      instructionId: p.instructionId,
      paymentId: p.id,
      policy: p.cid === CID_B ? { kind: "for", seconds: 30 * 86400 } : { kind: "forever" },
      scope: p.cid === CID_B ? "instruction" : "cid",
      nowSeconds: now,
    });
  }
  const failed = claim();
  stores.payments.markFailed(failed.id, "verify: invalid signature");
  const pending = claim({ amount: "777" });
  stores.payments.markUnconfirmed(pending.id, "no receipt yet");
  stores.resolutions.record({
    paymentId: pending.id,
    action: "check",
    outcome: "pending",
    basis: "chain",
    txHash: null,
    actor: "cli:operator",
    note: "still in flight",
  });
  const gift = stores.entitlements.grant({ payer: OTHER, cid: CID_A, instructionId: a.id, note: "a refund" }, now);
  stores.entitlements.revoke(gift.id, now + 1);
  stores.siwxNonces.use("nonce-one", now);
  stores.siwxNonces.use("nonce-two", now + 5);
  stores.paymentIdentifiers.remember("pay_0000000000000001", "payload-hash-1", new Date().toISOString());
  stores.paymentIdentifiers.attach("pay_0000000000000001", settled[0].id);
  stores.paymentIdentifiers.remember("pay_0000000000000002", "payload-hash-2", new Date().toISOString());
  const expires = new Date(Date.now() + 86_400_000).toISOString();
  stores.tokens.record({
    id: "tok-1",
    scopes: ["read"],
    label: "dashboard",
    createdAt: new Date().toISOString(),
    expiresAt: expires,
  });
  stores.tokens.record({
    id: "tok-2",
    scopes: ["read", "write"],
    label: null,
    createdAt: new Date().toISOString(),
    expiresAt: expires,
  });
  stores.tokens.revoke("tok-2", new Date().toISOString());
  stores.notifications.queueTest(stores.notifications.listWebhooks().find((w) => w.id === hook.id)!);
  const funnel = createFunnelCounters(db.sqlite);
  const item = { cid: CID_A, instruction: { id: a.id } };
  funnel.offer(item);
  funnel.offer(item);
  funnel.proof(item);
  funnel.offer({ cid: CID_B, instruction: { id: b.id } });
  funnel.stop(); // flushes
  // Everything into the file itself, so the file's bytes are the whole shop (the test compares them).
  db.sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.sqlite.close();
}

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
