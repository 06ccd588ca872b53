/**
 * The PostgreSQL test harness itself (test/support/postgres.ts): every
 * PostgreSQL test leans on it handing out a real, empty, separate database on a
 * server that runs unprivileged in a folder of its own.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import { SQL } from "bun";
import { createTestDatabase, pgAvailable, testServer } from "../support/postgres";

const available = await pgAvailable("db/postgres-harness");

describe.skipIf(!available)("PostgreSQL test harness", () => {
  const clients: SQL[] = [];
  const connect = (url: string) => {
    const sql = new SQL(url);
    clients.push(sql);
    return sql;
  };
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
  });

  test("a new database takes a table and gives its rows back", async () => {
    const url = await createTestDatabase();
    expect(url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/cidgate_test_\d+$/);
    const sql = connect(url);
    expect(await sql`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`).toEqual([{ n: 0 }]);
    await sql`CREATE TABLE files (cid text PRIMARY KEY, price bigint NOT NULL)`;
    await sql`INSERT INTO files ${sql([
      { cid: "bafy1", price: 10 },
      { cid: "bafy2", price: 20 },
    ])}`;
    expect(await sql`SELECT cid, price::int AS price FROM files ORDER BY cid`).toEqual([
      { cid: "bafy1", price: 10 },
      { cid: "bafy2", price: 20 },
    ]);
  });

  test("two databases are independent", async () => {
    const [a, b] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    expect(a).not.toBe(b);
    const sa = connect(a);
    const sb = connect(b);
    await sa`CREATE TABLE t (v text)`;
    await sa`INSERT INTO t VALUES ('in a')`;
    expect(await sb`SELECT to_regclass('public.t') AS t`).toEqual([{ t: null }]);
    await sb`CREATE TABLE t (v text)`;
    await sb`INSERT INTO t VALUES ('in b')`;
    expect(await sa`SELECT v FROM t`).toEqual([{ v: "in a" }]);
    expect(await sb`SELECT v FROM t`).toEqual([{ v: "in b" }]);
    expect((await sa`SELECT current_database() AS d`)[0].d).not.toBe((await sb`SELECT current_database() AS d`)[0].d);
  });

  test("one server for the whole process, unprivileged, in its own temp folder", async () => {
    const server = await testServer();
    expect(await testServer()).toBe(server);
    const sql = connect(await createTestDatabase());
    const [{ dir }] = await sql`SELECT current_setting('data_directory') AS dir`;
    expect(dir).toBe(server.dataDirectory);
    expect(dir.startsWith(`${server.folder}/`)).toBe(true);
    // The postmaster's real and effective uids (the kernel's word, not the server's), and the data
    // directory's owner: never root, and as root the harness hands them to nobody.
    const uids = readFileSync(`/proc/${server.pid}/status`, "utf8")
      .split("\n")
      .find((l) => l.startsWith("Uid:"))!
      .split(/\s+/)
      .slice(1, 3)
      .map(Number);
    expect(uids).toEqual([server.uid, server.uid]);
    expect(server.uid).not.toBe(0);
    if (process.getuid?.() !== 0) expect(server.uid).toBe(process.getuid!());
    expect(statSync(dir).uid).toBe(server.uid);
    // It listens on loopback only.
    expect(await sql`SELECT current_setting('listen_addresses') AS a`).toEqual([{ a: "127.0.0.1" }]);
  });
});
