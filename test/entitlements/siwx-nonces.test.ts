/**
 * The used sign-in nonces (src/entitlements/siwx-nonces.ts and
 * siwx-nonces-pg.ts): single use must hold within a turn's batch, across
 * batches, across two connections (a second process, the CLI, another
 * replica) and across a restart, on SQLite and on PostgreSQL; and, as
 * sign-ins are written in batches (one per event-loop turn), a batch the
 * database refuses must serve nobody and record nothing.
 */
import { afterAll, afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../../src/db/client";
import { openPg } from "../../src/db/pg";
import { createSiwxNonceStore, type SiwxNonceStore } from "../../src/entitlements/siwx-nonces";
import { createPgSiwxNonceStore } from "../../src/entitlements/siwx-nonces-pg";
import { ENGINES, type Engine } from "../support/engines";
import { createTestDatabase, pgAvailable } from "../support/postgres";

const T0 = 1_800_000_000;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const skip = { sqlite: false, postgres: !(await pgAvailable("siwx nonces")) };

function dbFile() {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-nonces-"));
  dirs.push(dir);
  return join(dir, "db.sqlite");
}

/** One database of `engine` that several connections open (processes, replicas, a restart). */
interface Shared {
  /** A new connection (pool) to it, and the nonce store over that connection. */
  connect(): Promise<Connection>;
}

interface Connection {
  nonces: SiwxNonceStore;
  rows(): Promise<number>;
  /** Fault injection: the database refuses the row of `nonce` (as a full disk would refuse a write) until `allow`. */
  refuse(nonce: string): Promise<void>;
  allow(): Promise<void>;
  close(): Promise<void>;
}

async function shared(engine: Engine): Promise<Shared> {
  if (engine === "sqlite") {
    const path = dbFile();
    return {
      async connect() {
        const db = openDb(path);
        return {
          nonces: createSiwxNonceStore(db),
          rows: async () => db.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM siwx_nonces").get()!.n,
          refuse: async (nonce) => {
            db.sqlite.exec(
              `CREATE TEMP TRIGGER refuse BEFORE INSERT ON siwx_nonces WHEN NEW.nonce = '${nonce}' BEGIN SELECT RAISE(ABORT, 'refused'); END`,
            );
          },
          allow: async () => {
            db.sqlite.exec("DROP TRIGGER refuse");
          },
          close: async () => db.sqlite.close(),
        };
      },
    };
  }
  const url = await createTestDatabase();
  return {
    async connect() {
      const pg = await openPg(url);
      return {
        nonces: createPgSiwxNonceStore(pg),
        rows: async () => (await pg.sql`SELECT count(*)::int AS n FROM siwx_nonces`)[0].n,
        refuse: async (nonce) => {
          await pg.sql.unsafe(`
            CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
            CREATE TRIGGER refuse BEFORE INSERT ON siwx_nonces
              FOR EACH ROW WHEN (NEW.nonce = '${nonce}') EXECUTE FUNCTION refuse();`);
        },
        allow: async () => {
          await pg.sql.unsafe("DROP TRIGGER refuse ON siwx_nonces; DROP FUNCTION refuse()");
        },
        close: () => pg.close(),
      };
    },
  };
}

describe.each(ENGINES)("%s", (engine) => {
  describe.skipIf(skip[engine])("siwx nonces", () => {
    const open: { close(): Promise<void> }[] = [];
    let db: Shared;
    // A long bound: the first test of the process starts the PostgreSQL server, and bun kills what a
    // timed-out hook spawned.
    beforeEach(async () => {
      db = await shared(engine);
    }, 60_000);
    afterEach(async () => {
      for (const c of open.splice(0)) await c.close();
    });
    const connect = async () => {
      const c = await db.connect();
      open.push(c);
      return c;
    };

    test("one turn: distinct nonces are each first; the same nonce twice in it is first once", async () => {
      const { nonces, rows } = await connect();
      const answers = await Promise.all([
        nonces.useSoon("a", T0),
        nonces.useSoon("b", T0),
        nonces.useSoon("a", T0),
        nonces.useSoon("c", T0),
        nonces.useSoon("a", T0),
      ]);
      expect(answers).toEqual([true, true, false, true, false]);
      expect(await rows()).toBe(3);
      // a later turn, and the one-at-a-time path, see them used
      expect(await nonces.useSoon("b", T0 + 1)).toBe(false);
      expect(await nonces.use("c", T0 + 1)).toBe(false);
    });

    test("100 racing uses of ten nonces over two connections: each nonce first exactly once", async () => {
      const a = (await connect()).nonces;
      const b = (await connect()).nonces;
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).useSoon(`n:${i % 10}`, T0)),
      );
      // ten nonces, ten uses each: each nonce first exactly once, whichever connection won it
      for (let k = 0; k < 10; k++) expect(answers.filter((first, i) => first && i % 10 === k)).toHaveLength(1);
      // what one connection wrote with `use` (the CLI, an older server) the other refuses
      expect(await a.use("cli", T0)).toBe(true);
      expect(await b.useSoon("cli", T0)).toBe(false);
    });

    test("one nonce used from two connections at the same moment: exactly one first use", async () => {
      const a = (await connect()).nonces;
      const b = (await connect()).nonces;
      for (let round = 0; round < 20; round++) {
        const nonce = `same:${round}`;
        const answers = await Promise.all([
          a.use(nonce, T0),
          b.use(nonce, T0),
          a.useSoon(nonce, T0),
          b.useSoon(nonce, T0),
        ]);
        expect({ round, firsts: answers.filter(Boolean).length }).toEqual({ round, firsts: 1 });
      }
    });

    test("two connections' batches of the same nonces in opposite orders: each nonce first once, no batch refused", async () => {
      const a = (await connect()).nonces;
      const b = (await connect()).nonces;
      // both connected before the race (a first query also opens the connection)
      await Promise.all([a.use("warm-a", T0), b.use("warm-b", T0)]);
      for (let round = 0; round < 10; round++) {
        const keys = Array.from({ length: 500 }, (_, i) => `r${round}:${i}`);
        const [fromA, fromB] = await Promise.all([
          Promise.all(keys.map((k) => a.useSoon(k, T0))),
          Promise.all([...keys].reverse().map((k) => b.useSoon(k, T0))),
        ]);
        fromB.reverse();
        expect(keys.filter((_, i) => fromA[i] === fromB[i])).toEqual([]);
      }
    });

    test("after a restart a used nonce is still used", async () => {
      const before = await db.connect();
      expect(await before.nonces.useSoon("kept", T0)).toBe(true);
      await before.close();
      const after = await connect();
      expect(await after.nonces.useSoon("kept", T0 + 5)).toBe(false);
    });

    test("prune forgets the nonces used before a time, and says how many", async () => {
      const { nonces, rows } = await connect();
      for (const [nonce, at] of [
        ["old1", T0 - 10],
        ["old2", T0 - 1],
        ["now", T0],
        ["later", T0 + 1],
      ] as const)
        await nonces.use(nonce, at);
      expect(await nonces.prune(T0)).toBe(2);
      expect(await rows()).toBe(2);
      expect(await nonces.prune(T0)).toBe(0);
      // a pruned nonce is no longer known (it can no longer verify anyway)
      expect(await nonces.use("old1", T0)).toBe(true);
    });

    test("a batch the database refuses rejects every caller in it and records none of it", async () => {
      const { nonces, rows, refuse, allow } = await connect();
      await refuse("boom");
      const answers = await Promise.allSettled([
        nonces.useSoon("x", T0),
        nonces.useSoon("boom", T0),
        nonces.useSoon("y", T0),
      ]);
      expect(answers.map((a) => a.status)).toEqual(["rejected", "rejected", "rejected"]);
      expect(await rows()).toBe(0);
      await expect((async () => nonces.use("boom", T0))()).rejects.toThrow();
      await allow();
      // nothing was spent: the same sign-ins are first now
      expect(await Promise.all([nonces.useSoon("x", T0), nonces.useSoon("y", T0)])).toEqual([true, true]);
      expect(await nonces.use("boom", T0)).toBe(true);
    });

    test("more than one batch's worth at once: every use answered, each nonce first once", async () => {
      const { nonces, rows } = await connect();
      const answers = await Promise.all(Array.from({ length: 1500 }, (_, i) => nonces.useSoon(`k${i % 1000}`, T0)));
      expect(answers.filter(Boolean)).toHaveLength(1000);
      expect(answers.slice(0, 1000).every(Boolean)).toBe(true);
      expect(await rows()).toBe(1000);
    }, 60_000);
  });
});
