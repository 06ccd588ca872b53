/**
 * A whole cidgate on one machine, nothing mocked: a fresh anvil chain with the
 * EIP-3009 test token (startDevnet), the in-process facilitator settling on it
 * with the relayer key, and the production server (src/server.ts) on a free
 * loopback port with
 * files indexed and priced. The demo and the gateway benchmark mirror this.
 *
 * On either engine (`engine`): SQLite (`:memory:`, the default) or a fresh
 * database on the tests' real PostgreSQL server (test/support/postgres.ts),
 * with the replica's content index in a local SQLite file, as production
 * opens it (db/database.ts). Tests read rows through `stack.sql`, the same
 * text on both.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { erc20Abi } from "viem";
import { type Devnet, localPublicClient, startDevnet } from "../../src/chain/devnet";
import { type Db, openDb } from "../../src/db/client";
import { isPg } from "../../src/db/database";
import { openPg, type Pg } from "../../src/db/pg";
import { createLocalFacilitator } from "../../src/facilitator/local";
import type { Facilitator } from "../../src/facilitator/types";
import { createLogger } from "../../src/http/logging";
import { startServer } from "../../src/server";
import { loadSettings } from "../../src/settings";
import { createStores, type SqliteStores, type Stores } from "../../src/stores";
import { createPgStores } from "../../src/stores-pg";
import { type EngineSql, engineSql } from "../stats/engine-sql";
import type { Engine } from "../support/engines";
import { createTestDatabase } from "../support/postgres";

export const STACK_JWT_SECRET = "stack-secret-stack-secret-stack-secret-01";

export interface StackOptions {
  /** name -> bytes, written to the content folder and indexed. */
  files: Record<string, string | Uint8Array>;
  /** Price of every file, USDC smallest unit (default 10000 = $0.01). */
  amount?: string;
  buyers?: number;
  env?: Record<string, string>;
  /** Pricing files (name -> YAML) written to the config folder; given, the server loads and watches them. */
  config?: Record<string, string>;
  /** Background reconciliation (default off: tests look at pending rows; they call `reconciler.runOnce()`). */
  reconcile?: boolean;
  /** Wraps the real facilitator (to count calls or inject a fault). */
  wrapFacilitator?: (real: Facilitator) => Facilitator;
  /** A database file in the stack's folder (`settings.db`) instead of `:memory:`: for another process (a CLI) to open. */
  dbFile?: boolean;
  /** The server's `shutdownGraceMs` (server.ts). */
  shutdownGraceMs?: number;
}

/** The stack's database, opened on its engine: the stores over it, raw SQL on it, and how to close it. */
interface StackDatabase {
  engine: Engine;
  /** What the server is given as `db`: SQLite's Db or the Pg. */
  db: Db | Pg;
  /** The content index (content_files): the database itself on SQLite, a local file beside PostgreSQL. */
  contentDb: Db;
  stores: Stores;
  sql: EngineSql;
  close(): Promise<void>;
}

async function openStackDatabase(
  engine: Engine,
  dir: string,
  settings: ReturnType<typeof loadSettings>,
): Promise<StackDatabase> {
  if (engine === "sqlite") {
    const db = openDb(settings.db);
    return {
      engine,
      db,
      contentDb: db,
      stores: createStores(db, settings),
      sql: engineSql({ engine, sqlite: db, close: async () => {} }),
      close: async () => db.sqlite.close(),
    };
  }
  const pg = await openPg(settings.db);
  const local = openDb(join(dir, "content.db"));
  const stores = createPgStores(pg, { local, settings });
  return {
    engine,
    db: pg,
    contentDb: local,
    stores,
    sql: engineSql({ engine, pg, url: settings.db, close: async () => {} }),
    async close() {
      stores.stop();
      await pg.close();
      local.sqlite.close();
    },
  };
}

/** The stores a stack hands out: SQLite's synchronous ones, or (either engine) the awaitable ones. */
type StackStores<E extends Engine> = [E] extends ["sqlite"] ? SqliteStores : Stores;

export interface EngineOption<E extends Engine> {
  /** The database engine (default sqlite); postgres: a fresh database on the tests' PostgreSQL server. */
  engine?: E;
}

/** A stack; on SQLite alone (`engine` left out) its stores answer synchronously, as before. */
export type TestStack<E extends Engine = "sqlite"> = Omit<Awaited<ReturnType<typeof buildTestStack>>, "stores"> & {
  /** The app's stores: write through these so its catalog sees the change at once. */
  stores: StackStores<E>;
};

export function createTestStack(options: StackOptions & EngineOption<"sqlite">): Promise<TestStack<"sqlite">>;
export function createTestStack(options: StackOptions & EngineOption<Engine>): Promise<TestStack<Engine>>;
export function createTestStack(options: StackOptions & EngineOption<Engine>): Promise<TestStack<Engine>> {
  return buildTestStack(options);
}

async function buildTestStack(options: StackOptions & EngineOption<Engine>) {
  const engine = options.engine ?? "sqlite";
  if (engine === "postgres" && options.dbFile) throw new Error("dbFile is SQLite's: a PostgreSQL stack has its URL");
  const pgUrl = engine === "postgres" ? await createTestDatabase() : undefined;
  const devnet: Devnet = await startDevnet({ buyers: options.buyers ?? 3 });
  const dir = mkdtempSync(join(tmpdir(), "cidgate-stack-"));
  let opened: StackDatabase | undefined;
  try {
    const settings = loadSettings({
      CIDGATE_DB: pgUrl ?? (options.dbFile ? join(dir, "cidgate.db") : ":memory:"),
      HOST: "127.0.0.1",
      PORT: "0",
      CIDGATE_CONTENT_DIR: join(dir, "content"),
      CIDGATE_CONFIG_DIR: join(dir, "config"),
      USDC_ADDRESS_BASE_SEPOLIA: devnet.token,
      FACILITATOR_URL: "local",
      RPC_URL: devnet.rpcUrl,
      RELAYER_PRIVATE_KEY: devnet.relayer.privateKey,
      FACILITATOR_TIMEOUT_MS: "20000",
      ...options.env,
    });
    const real = createLocalFacilitator({
      rpcUrl: devnet.rpcUrl,
      relayerPrivateKey: devnet.relayer.privateKey,
      settings,
    });
    const facilitator = options.wrapFacilitator ? options.wrapFacilitator(real) : real;
    opened = await openStackDatabase(engine, dir, settings);
    const { db, contentDb, stores, sql } = opened;

    mkdirSync(settings.contentDir, { recursive: true });
    mkdirSync(settings.configDir, { recursive: true });
    for (const [name, yaml] of Object.entries(options.config ?? {}))
      writeFileSync(join(settings.configDir, name), yaml);
    for (const [name, bytes] of Object.entries(options.files)) writeFileSync(join(settings.contentDir, name), bytes);
    await stores.content.index();
    const instruction = await stores.instructions.create({
      name: "Access fee",
      description: "Access fee",
      requirements: [
        {
          network: "base-sepolia",
          asset: devnet.token,
          pay_to: devnet.seller.address,
          amount: options.amount ?? "10000",
        },
      ],
    });
    const cids: Record<string, string> = {};
    for (const name of Object.keys(options.files)) {
      const row = contentDb.sqlite
        .query<{ cid: string }, [string]>("SELECT cid FROM content_files WHERE path = ?")
        .get(name);
      if (!row) throw new Error(`${name} was not indexed`);
      cids[name] = row.cid;
      await stores.instructions.attachCid(instruction.id, row.cid);
    }

    // The production server (src/server.ts): Bun's router for the gateway, the request log, the limits.
    const running = await startServer({
      settings,
      db,
      contentDb,
      stores,
      log: createLogger("silent"),
      jwtSecret: STACK_JWT_SECRET,
      facilitator,
      pricing: options.config !== undefined,
      shutdownGraceMs: options.shutdownGraceMs,
      reconcile: options.reconcile ?? false,
    });
    const { url, app } = running;

    const chain = localPublicClient(devnet.rpcUrl);
    const balanceOf = (address: `0x${string}`) =>
      chain.readContract({ address: devnet.token, abi: erc20Abi, functionName: "balanceOf", args: [address] });

    return {
      url,
      app,
      /** The running server (its webhook dispatcher, its stats). */
      server: running,
      engine,
      /** The SQLite database (tests that run on SQLite only); on PostgreSQL it throws: use `sql`. */
      get db(): Db {
        if (isPg(db)) throw new Error("a PostgreSQL stack has no SQLite db: use stack.sql");
        return db;
      },
      /**
       * Raw SQL on the stack's database, either engine: `?` parameters; rows as the engine gives
       * them (PostgreSQL bigint columns as strings: compare them through Number()).
       */
      sql,
      stores,
      settings,
      devnet,
      facilitator,
      /** Offer and proof counters, reports and metrics (src/stats/service.ts). */
      stats: running.stats,
      reconciler: running.reconciler,
      instruction,
      cids,
      balanceOf,
      async stop() {
        await running.stop(true);
        real.close();
        await opened?.close();
        await devnet.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await opened?.close();
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}
