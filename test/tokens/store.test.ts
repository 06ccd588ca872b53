/**
 * The management token store on both engines (SQLite, and a real PostgreSQL
 * when the machine has one): records, the list's order, revocation that
 * keeps its first time, and a revocation through one connection (the CLI,
 * another replica) seen by another at its very next read, with no cache.
 */
import { afterAll, afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../../src/db/client";
import { openPg } from "../../src/db/pg";
import { createTokenStore, type TokenStore } from "../../src/tokens/store";
import { createPgTokenStore } from "../../src/tokens/store-pg";
import { ENGINES, type Engine } from "../support/engines";
import { createTestDatabase, pgAvailable } from "../support/postgres";

const skip = { sqlite: false, postgres: !(await pgAvailable("token store")) };
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** One database that several connections open (the server, the CLI, other replicas). */
async function shared(engine: Engine): Promise<() => Promise<{ tokens: TokenStore; close(): Promise<void> }>> {
  if (engine === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "cidgate-tokens-"));
    dirs.push(dir);
    return async () => {
      const db = openDb(join(dir, "db.sqlite"));
      return { tokens: createTokenStore(db), close: async () => db.sqlite.close() };
    };
  }
  const url = await createTestDatabase();
  return async () => {
    const pg = await openPg(url);
    return { tokens: createPgTokenStore(pg), close: () => pg.close() };
  };
}

const token = (id: string, createdAt: string, over: { scopes?: string[]; label?: string | null } = {}) => ({
  id,
  scopes: over.scopes ?? ["read"],
  label: over.label ?? null,
  createdAt,
  expiresAt: "2030-01-01T00:00:00.000Z",
});

const ID_A = "0190a000-0000-4000-8000-00000000000a";
const ID_B = "0190a000-0000-4000-8000-00000000000b";
const ID_C = "0190a000-0000-4000-8000-00000000000c";

describe.each(ENGINES)("%s", (engine) => {
  describe.skipIf(skip[engine])("token store", () => {
    const open: { close(): Promise<void> }[] = [];
    let connect: () => Promise<{ tokens: TokenStore }>;
    // A long bound: the first test of the process starts the PostgreSQL server, and bun kills what a
    // timed-out hook spawned.
    beforeEach(async () => {
      const make = await shared(engine);
      connect = async () => {
        const c = await make();
        open.push(c);
        return c;
      };
    }, 60_000);
    afterEach(async () => {
      for (const c of open.splice(0)) await c.close();
    });

    test("record, get and list: newest first (ties by id), up to the limit; a second record of an id keeps the first", async () => {
      const { tokens } = await connect();
      await tokens.record(token(ID_A, "2026-01-01T00:00:00.000Z", { scopes: ["read", "write"], label: "laptop" }));
      await tokens.record(token(ID_B, "2026-01-02T00:00:00.000Z"));
      await tokens.record(token(ID_C, "2026-01-02T00:00:00.000Z"));
      await tokens.record(token(ID_A, "2026-02-01T00:00:00.000Z", { label: "again" }));
      expect(await tokens.get(ID_A)).toEqual({
        id: ID_A,
        scopes: ["read", "write"],
        label: "laptop",
        createdAt: "2026-01-01T00:00:00.000Z",
        expiresAt: "2030-01-01T00:00:00.000Z",
        revokedAt: null,
      });
      expect(await tokens.get("no-such-id")).toBeUndefined();
      expect((await tokens.list()).map((t) => t.id)).toEqual([ID_C, ID_B, ID_A]);
      expect((await tokens.list(2)).map((t) => t.id)).toEqual([ID_C, ID_B]);
    });

    test("revoke: the first time stays; an unknown id is undefined; isRevoked says so", async () => {
      const { tokens } = await connect();
      await tokens.record(token(ID_A, "2026-01-01T00:00:00.000Z"));
      expect(await tokens.isRevoked(ID_A)).toBe(false);
      const first = await tokens.revoke(ID_A, "2026-03-01T00:00:00.000Z");
      expect(first).toMatchObject({ id: ID_A, revokedAt: "2026-03-01T00:00:00.000Z" });
      expect(await tokens.revoke(ID_A, "2026-04-01T00:00:00.000Z")).toEqual(first);
      expect(await tokens.isRevoked(ID_A)).toBe(true);
      expect(await tokens.revoke(ID_B, "2026-03-01T00:00:00.000Z")).toBeUndefined();
      expect(await tokens.isRevoked(ID_B)).toBe(false);
    });

    test("a token without a row is recorded by its revoke, revoked at that time", async () => {
      const { tokens } = await connect();
      const legacy = token(ID_B, "2026-01-01T00:00:00.000Z", { label: "old" });
      const revoked = await tokens.revoke(ID_B, "2026-03-01T00:00:00.000Z", legacy);
      expect(revoked).toEqual({ ...legacy, revokedAt: "2026-03-01T00:00:00.000Z" });
      expect(await tokens.isRevoked(ID_B)).toBe(true);
      expect((await tokens.list()).map((t) => t.id)).toEqual([ID_B]);
      // `unrecorded` for another id is not this token's row: nothing recorded
      expect(await tokens.revoke(ID_C, "2026-03-01T00:00:00.000Z", legacy)).toBeUndefined();
      expect(await tokens.get(ID_C)).toBeUndefined();
    });

    test("revoked through one connection (the CLI, another replica): refused by another at its next read", async () => {
      const server = (await connect()).tokens;
      const other = (await connect()).tokens;
      await server.record(token(ID_A, "2026-01-01T00:00:00.000Z"));
      expect(await server.isRevoked(ID_A)).toBe(false);
      expect(await other.isRevoked(ID_A)).toBe(false);
      await other.revoke(ID_A, "2026-03-01T00:00:00.000Z");
      expect(await server.isRevoked(ID_A)).toBe(true);
      expect((await server.get(ID_A))?.revokedAt).toBe("2026-03-01T00:00:00.000Z");
    });
  });
});
