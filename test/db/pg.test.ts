/**
 * src/db/pg.ts and the PostgreSQL schema (src/db/schema-pg.ts, drizzle-pg/) on a real server:
 * the migrations make every table and run once when replicas open together, the rollup triggers
 * agree with SQLite's row for row, catalog_generation moves once per catalog-changing statement,
 * transactions roll back as one, and a refused open names no password.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { asc, eq, getTableName, is, sql } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import { SQLiteTable } from "drizzle-orm/sqlite-core";
import { openDb } from "../../src/db/client";
import { openPg, type Pg } from "../../src/db/pg";
import * as sqliteSchema from "../../src/db/schema";
import * as pgSchema from "../../src/db/schema-pg";
import { selectsPostgres } from "../../src/settings";
import { createTestDatabase, pgAvailable } from "../support/postgres";

const opened: Pg[] = [];
async function open(url?: string): Promise<Pg> {
  const pg = await openPg(url ?? (await createTestDatabase()));
  opened.push(pg);
  return pg;
}
afterAll(async () => {
  for (const pg of opened) await pg.close();
});

const JOURNAL = JSON.parse(readFileSync(join(import.meta.dir, "../../drizzle-pg/meta/_journal.json"), "utf8"));

test("selectsPostgres: postgres:// and postgresql:// only", () => {
  expect(selectsPostgres("postgres://u:p@h/db")).toBe(true);
  expect(selectsPostgres("postgresql://h/db")).toBe(true);
  expect(selectsPostgres("/var/lib/cidgate/cidgate.db")).toBe(false);
  expect(selectsPostgres(":memory:")).toBe(false);
  expect(selectsPostgres("postgres.db")).toBe(false);
});

describe.skipIf(!(await pgAvailable()))("PostgreSQL", () => {
  test("the migrations make every table of the SQLite schema but content_files, and the two of PostgreSQL", async () => {
    const pg = await open();
    const rows = await pg.sql<{ table_name: string }[]>`
      SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`;
    const sqliteTables = Object.values(sqliteSchema)
      .filter((t) => is(t, SQLiteTable))
      .map((t) => getTableName(t as SQLiteTable))
      .filter((n) => n !== "content_files");
    const expected = [...sqliteTables, "catalog_generation", "leases"].sort();
    expect(rows.map((r) => r.table_name)).toEqual(expected);
    const pgTables = Object.values(pgSchema)
      .filter((t) => is(t, PgTable))
      .map((t) => getTableName(t as PgTable))
      .sort();
    expect(pgTables).toEqual(expected);
    // The indexes drizzle-kit writes from expressions and conditions.
    const indexes = await pg.sql<{ indexdef: string }[]>`
      SELECT indexdef FROM pg_indexes WHERE indexname IN ('payments_payer_lower', 'payments_pending') ORDER BY indexname`;
    expect(indexes.map((i) => i.indexdef)).toEqual([
      expect.stringContaining("(lower(payer), id)"),
      expect.stringContaining("WHERE (state = 'pending'::text)"),
    ]);
    const [generation] = await pg.db.select().from(pgSchema.catalogGeneration);
    expect(generation).toEqual({ id: 1, generation: 0 });
  });

  test("two replicas opening one empty database at once both start, and it is migrated once", async () => {
    const url = await createTestDatabase();
    const [a, b] = await Promise.all([open(url), open(url)]);
    const [row] = await a.sql<{ n: string }[]>`SELECT count(*) AS n FROM drizzle.__drizzle_migrations`;
    expect(Number(row?.n)).toBe(JOURNAL.entries.length);
    // Both work on the same schema.
    await a.db.insert(pgSchema.leases).values({ name: "reconciler", holder: "a", expiresAt: 1 });
    expect(await b.db.select().from(pgSchema.leases)).toEqual([{ name: "reconciler", holder: "a", expiresAt: 1 }]);
    // A third open (a restart) finds nothing to do.
    await open(url);
    const [again] = await a.sql<{ n: string }[]>`SELECT count(*) AS n FROM drizzle.__drizzle_migrations`;
    expect(Number(again?.n)).toBe(JOURNAL.entries.length);
  });

  test("the rollup triggers give SQLite's rollup rows for the same payment writes, oversized amounts included", async () => {
    const pg = await open();
    const lite = openDb(":memory:", { backupBeforeMigration: false });
    const base = {
      network: "base",
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      payer: "0x1111111111111111111111111111111111111111",
      cid: "bafy",
      instructionId: "i-a",
      instructionVersion: 1,
      payTo: "0x2222222222222222222222222222222222222222",
      validBefore: 1_900_000_000,
      x402Version: 2,
      proofHash: "h",
      createdAt: "2026-01-01T10:05:00.000Z",
      updatedAt: "2026-01-01T10:05:00.000Z",
    };
    type State = "pending" | "settled" | "failed";
    const pay = (nonce: string, amount: string, state: State, more: Partial<typeof base> = {}) => ({
      ...base,
      nonce,
      amount,
      state,
      ...more,
    });
    // Each write, on both engines. Ids are given so that both refer to the same rows.
    const writes: {
      insert?: ReturnType<typeof pay> & { id: number };
      update?: [number, Partial<ReturnType<typeof pay>>];
      remove?: number;
    }[] = [
      { insert: { id: 1, ...pay("n1", "1000000", "pending") } },
      { insert: { id: 2, ...pay("n2", "2500000", "settled") } },
      // Above 2^63 (20 digits): counted in `oversized`, not summed.
      { insert: { id: 3, ...pay("n3", "10000000000000000000", "settled") } },
      { update: [1, { state: "settled" }] },
      { update: [2, { amount: "3000000" }] }, // settled stays settled, amount changes
      { update: [3, { state: "failed" }] }, // the oversized one leaves
      { insert: { id: 4, ...pay("n4", "123456789012345", "settled", { instructionId: "i-b" }) } }, // 15 digits: summed
      { update: [4, { createdAt: "2026-01-01T11:59:59.000Z" }] }, // moves hour
      { remove: 2 },
      { insert: { id: 5, ...pay("n5", "99999999999999999999999", "settled", { network: "base-sepolia" }) } },
      { update: [5, { updatedAt: "2026-01-01T12:00:00.000Z" }] }, // a column the triggers do not watch
      { update: [1, { state: "failed" }] },
      { update: [1, { state: "settled" }] },
    ];
    for (const w of writes) {
      if (w.insert) {
        lite.insert(sqliteSchema.payments).values(w.insert).run();
        await pg.db.insert(pgSchema.payments).values(w.insert);
      }
      if (w.update) {
        const [id, set] = w.update;
        lite.update(sqliteSchema.payments).set(set).where(eq(sqliteSchema.payments.id, id)).run();
        await pg.db.update(pgSchema.payments).set(set).where(eq(pgSchema.payments.id, id));
      }
      if (w.remove) {
        lite.delete(sqliteSchema.payments).where(eq(sqliteSchema.payments.id, w.remove)).run();
        await pg.db.delete(pgSchema.payments).where(eq(pgSchema.payments.id, w.remove));
      }
    }
    const s = sqliteSchema;
    const p = pgSchema;
    const liteRows = {
      hourly: lite.select().from(s.salesHourly).orderBy(asc(s.salesHourly.hour), asc(s.salesHourly.network)).all(),
      instructionHourly: lite
        .select()
        .from(s.salesInstructionHourly)
        .orderBy(
          asc(s.salesInstructionHourly.instructionId),
          asc(s.salesInstructionHourly.hour),
          asc(s.salesInstructionHourly.network),
        )
        .all(),
      totals: lite
        .select()
        .from(s.salesTotals)
        .orderBy(asc(s.salesTotals.instructionId), asc(s.salesTotals.network))
        .all(),
    };
    const pgRows = {
      hourly: await pg.db.select().from(p.salesHourly).orderBy(asc(p.salesHourly.hour), asc(p.salesHourly.network)),
      instructionHourly: await pg.db
        .select()
        .from(p.salesInstructionHourly)
        .orderBy(
          asc(p.salesInstructionHourly.instructionId),
          asc(p.salesInstructionHourly.hour),
          asc(p.salesInstructionHourly.network),
        ),
      totals: await pg.db
        .select()
        .from(p.salesTotals)
        .orderBy(asc(p.salesTotals.instructionId), asc(p.salesTotals.network)),
    };
    expect(pgRows).toEqual(liteRows);
    // What SQLite holds, spelled out, so that the comparison cannot pass on two empty sets.
    expect(liteRows.totals).toEqual([
      { instructionId: "i-a", network: "base", asset: base.asset, sales: 1, amount: 1000000, oversized: 0 },
      { instructionId: "i-a", network: "base-sepolia", asset: base.asset, sales: 1, amount: 0, oversized: 1 },
      { instructionId: "i-b", network: "base", asset: base.asset, sales: 1, amount: 123456789012345, oversized: 0 },
    ]);
    lite.sqlite.close();
  });

  test("catalog_generation moves once per statement changing instructions or mappings, never for payments", async () => {
    const pg = await open();
    const generation = async () => (await pg.db.select().from(pgSchema.catalogGeneration))[0]?.generation;
    const now = "2026-01-01T00:00:00.000Z";
    const instruction = (id: string) => ({
      id,
      name: id,
      requirements: [{ b: 1, a: 2 }],
      createdAt: now,
      updatedAt: now,
    });
    const mapping = (cid: string) => ({ cid, instructionId: "i1", createdAt: now });
    const steps: [string, () => Promise<unknown>, number][] = [
      [
        "insert two instructions in one statement",
        () => pg.db.insert(pgSchema.paymentInstructions).values([instruction("i1"), instruction("i2")]),
        1,
      ],
      [
        "insert three mappings in one statement",
        () => pg.db.insert(pgSchema.cidMappings).values([mapping("c1"), mapping("c2"), mapping("c3")]),
        1,
      ],
      ["update three mappings", () => pg.db.update(pgSchema.cidMappings).set({ source: "file:x" }), 1],
      [
        "upsert a mapping that exists (insert turned update)",
        () =>
          pg.db
            .insert(pgSchema.cidMappings)
            .values(mapping("c1"))
            .onConflictDoUpdate({ target: pgSchema.cidMappings.cid, set: { source: "api" } }),
        1,
      ],
      [
        "update an instruction",
        () =>
          pg.db
            .update(pgSchema.paymentInstructions)
            .set({ version: 2 })
            .where(eq(pgSchema.paymentInstructions.id, "i1")),
        1,
      ],
      [
        "delete two mappings",
        () => pg.db.delete(pgSchema.cidMappings).where(sql`${pgSchema.cidMappings.cid} IN ('c1', 'c2')`),
        1,
      ],
      [
        "delete an instruction",
        () => pg.db.delete(pgSchema.paymentInstructions).where(eq(pgSchema.paymentInstructions.id, "i2")),
        1,
      ],
      [
        "a delete that finds no row",
        () => pg.db.delete(pgSchema.cidMappings).where(eq(pgSchema.cidMappings.cid, "none")),
        0,
      ],
      [
        "insert a payment",
        () =>
          pg.db.insert(pgSchema.payments).values({
            network: "base",
            asset: "a",
            payer: "p",
            nonce: "n",
            cid: "c3",
            instructionId: "i1",
            instructionVersion: 2,
            amount: "1",
            payTo: "t",
            state: "pending",
            validBefore: 1,
            x402Version: 2,
            proofHash: "h",
            createdAt: now,
            updatedAt: now,
          }),
        0,
      ],
      ["settle a payment", () => pg.db.update(pgSchema.payments).set({ state: "settled" }), 0],
      [
        "three statements in one transaction",
        () =>
          pg.transaction(async (tx) => {
            await tx.insert(pgSchema.cidMappings).values(mapping("c4"));
            await tx.insert(pgSchema.cidMappings).values(mapping("c5"));
            await tx.delete(pgSchema.cidMappings).where(eq(pgSchema.cidMappings.cid, "c4"));
          }),
        3,
      ],
    ];
    let before = await generation();
    expect(before).toBe(0);
    for (const [what, write, moves] of steps) {
      await write();
      const after = await generation();
      expect({ what, moved: (after ?? 0) - (before ?? 0) }).toEqual({ what, moved: moves });
      before = after;
    }
    // json keeps the requirements as written, key order included (as SQLite's text does).
    const [i1] = await pg.db
      .select()
      .from(pgSchema.paymentInstructions)
      .where(eq(pgSchema.paymentInstructions.id, "i1"));
    expect(JSON.stringify(i1?.requirements)).toBe('[{"b":1,"a":2}]');
    // Stored as a JSON array, not as a JSON string holding one (what raw SQL and `db copy` read).
    const [raw] = await pg.sql<{ kind: string; text: string }[]>`
      SELECT json_typeof(requirements) AS kind, requirements::text AS text FROM payment_instructions WHERE id = 'i1'`;
    expect(raw).toEqual({ kind: "array", text: '[{"b":1,"a":2}]' });
  });

  test("transaction: a throw rolls back both inserts; q() is the transaction inside, the pool outside; nested joins", async () => {
    const pg = await open();
    expect(pg.q()).toBe(pg.db);
    const seen: unknown[] = [];
    await expect(
      pg.transaction(async (tx) => {
        seen.push(pg.q() === tx);
        await pg.q().insert(pgSchema.leases).values({ name: "a", holder: "h", expiresAt: 1 });
        await pg.transaction(async (inner) => {
          seen.push(inner === tx, pg.q() === tx);
          await pg.q().insert(pgSchema.leases).values({ name: "b", holder: "h", expiresAt: 2 });
        });
        // Both rows are visible inside, not outside.
        seen.push(
          (await pg.q().select().from(pgSchema.leases)).length,
          (await pg.db.select().from(pgSchema.leases)).length,
        );
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(seen).toEqual([true, true, true, 2, 0]);
    expect(await pg.db.select().from(pgSchema.leases)).toEqual([]);
    expect(pg.q()).toBe(pg.db);
    // And a callback that resolves commits.
    await pg.transaction(async () => {
      await pg.q().insert(pgSchema.leases).values({ name: "c", holder: "h", expiresAt: 3 });
    });
    expect(await pg.db.select().from(pgSchema.leases)).toEqual([{ name: "c", holder: "h", expiresAt: 3 }]);
  });

  test("text sorts by its bytes, as on SQLite, even in a database made with a language collation", async () => {
    // A database whose default collation is ICU's en-US, where "b" < "B" < "C".
    const url = new URL(await createTestDatabase());
    const admin = await open(url.toString());
    const name = `${url.pathname.slice(1)}_icu`;
    await admin.sql.unsafe(
      `CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`,
    );
    url.pathname = `/${name}`;
    const pg = await open(url.toString());
    const [ordered] = await pg.sql<
      { a: string[] }[]
    >`SELECT array_agg(x ORDER BY x) AS a FROM unnest(ARRAY['b', 'B', 'a']) x`;
    expect(ordered?.a).toEqual(["a", "b", "B"]); // the database's own order is the language's
    const now = "2026-01-01T00:00:00.000Z";
    const names = ["b", "B", "a", "_z", "0x9A", "0x9a"];
    await pg.db
      .insert(pgSchema.paymentInstructions)
      .values(names.map((n, i) => ({ id: `i${i}`, name: n, requirements: [], createdAt: now, updatedAt: now })));
    const rows = await pg.db
      .select()
      .from(pgSchema.paymentInstructions)
      .orderBy(asc(pgSchema.paymentInstructions.name));
    const lite = openDb(":memory:", { backupBeforeMigration: false });
    lite
      .insert(sqliteSchema.paymentInstructions)
      .values(names.map((n, i) => ({ id: `i${i}`, name: n, requirements: [], createdAt: now, updatedAt: now })))
      .run();
    const liteRows = lite
      .select()
      .from(sqliteSchema.paymentInstructions)
      .orderBy(asc(sqliteSchema.paymentInstructions.name))
      .all();
    lite.sqlite.close();
    expect(rows.map((r) => r.name)).toEqual(liteRows.map((r) => r.name));
    expect(rows.map((r) => r.name)).toEqual(["0x9A", "0x9a", "B", "_z", "a", "b"]);
  });

  test("a refused open (unknown role) is one line naming host and database, never the password", async () => {
    const url = new URL(await createTestDatabase());
    const database = url.pathname.slice(1);
    // The test server trusts loopback (no password is checked), so the refusal is for the role.
    url.username = "no_such_role";
    url.password = "wrong-Secret-4242";
    let error: unknown;
    try {
      await open(url.toString());
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain(`127.0.0.1:${url.port}/${database}`);
    expect(message).toContain("no_such_role");
    expect(message).not.toContain("wrong-Secret-4242");
    expect(message).not.toContain("\n");
  });
});
