/**
 * A whole app over an in-memory database, driven through `app.handle` behind the request-log wrapper, with
 * tokens signed by its secret. Shared by the management API tests. `engine` "postgres": the instructions on
 * a fresh PostgreSQL database (see engines.ts), closed after the test.
 */
import { createApp } from "../../src/app";
import type { Facilitator } from "../../src/facilitator/types";
import { createToken, type Scope } from "../../src/http/auth";
import { createLogger, withRequestLog } from "../../src/http/logging";
import { loadSettings, type Settings } from "../../src/settings";
import type { SqliteStores, Stores } from "../../src/stores";
import { type Engine, type EngineStores, engineStores } from "./engines";

export const SECRET = "test-secret-that-is-long-enough-0123456789";
export const BASE_SEPOLIA_USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
export const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const PAY_TO = "0x6135561038E7C676473431842e586C8248276AED";
export const CID_V1 = "bafkreih5aznjvttude6c3wbvqeebb6rlx5wkbzyppv7garjiubll2ceym4";
export const CID_V0 = "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG";
export const PREFIX = "/v3/x402/payment_instructions";

/** Not used by the management API; any call is a test bug. */
const unusedFacilitator: Facilitator = {
  verify: () => Promise.reject(new Error("unused")),
  settle: () => Promise.reject(new Error("unused")),
  supported: () => Promise.reject(new Error("unused")),
};

export function requirement(overrides: Record<string, unknown> = {}) {
  return {
    network: "base-sepolia",
    asset: BASE_SEPOLIA_USDC.toLowerCase(),
    pay_to: PAY_TO.toLowerCase(),
    amount: "10000",
    ...overrides,
  };
}

export function makeHarness(env?: Record<string, string>, engine?: "sqlite"): Promise<Harness<SqliteStores>>;
export function makeHarness(env: Record<string, string>, engine: Engine): Promise<Harness<Stores>>;
export async function makeHarness(env: Record<string, string> = {}, engine: Engine = "sqlite") {
  const settings = loadSettings({
    CIDGATE_DB: ":memory:",
    CIDGATE_CONFIG_DIR: "/nonexistent",
    CIDGATE_CONTENT_DIR: "/nonexistent",
    ...env,
  });
  return harness(await engineStores(engine, settings), settings);
}

export type Harness<S extends Stores> = Awaited<ReturnType<typeof harness<S>>>;

async function harness<S extends Stores>(engineDb: EngineStores<S>, settings: Settings) {
  const { stores, local: db } = engineDb;
  const logLines: Record<string, unknown>[] = [];
  // Capture the request lines as written (the real serialization) instead of printing them.
  const log = createLogger("info", {
    write(text: string) {
      for (const line of text.split("\n")) {
        if (!line) continue;
        const o = JSON.parse(line) as Record<string, unknown>;
        if ("method" in o) logLines.push(o);
      }
    },
  });
  const app = createApp({ settings, db, stores, log, jwtSecret: SECRET, facilitator: unusedFacilitator });
  // As src/index.ts serves it: through the request-log wrapper.
  const serve = withRequestLog((request) => app.handle(request), log);
  const tokens = {
    rw: await createToken(SECRET, { scopes: ["read", "write"], ttlSeconds: 600 }),
    read: await createToken(SECRET, { scopes: ["read"], ttlSeconds: 600 }),
    write: await createToken(SECRET, { scopes: ["write"], ttlSeconds: 600 }),
  };
  const token = (scopes: Scope[]) => createToken(SECRET, { scopes, ttlSeconds: 600 });

  /** Calls the app; `body` objects are sent as JSON, strings as they are. */
  async function call(
    method: string,
    path: string,
    opts: { body?: unknown; token?: string | null; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { ...opts.headers };
    const tok = opts.token === undefined ? tokens.rw : opts.token;
    if (tok !== null) headers.authorization = `Bearer ${tok}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      headers["content-type"] ??= "application/json";
    }
    const res = await serve(new Request(`http://localhost${path}`, { method, headers, body }));
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  async function create(overrides: Record<string, unknown> = {}) {
    const res = await call("POST", PREFIX, {
      body: { name: "Premium", payment_requirements: [requirement()], ...overrides },
    });
    if (res.status !== 200) throw new Error(`create failed: ${res.status} ${res.text}`);
    return res.json.data as { id: string; version: number; name: string; created_at: string; [k: string]: unknown };
  }

  /**
   * Every row of the management tables: compared before and after a rejected request. A string at once
   * on SQLite (as tests of other folders read it), a promise of it on PostgreSQL.
   */
  function snapshot(): string | Promise<string> {
    if (engineDb.engine === "sqlite") {
      return JSON.stringify({
        instructions: db.sqlite.query("select * from payment_instructions order by id").all(),
        cids: db.sqlite.query("select * from cid_mappings order by cid").all(),
      });
    }
    const pg = engineDb.pg!;
    return Promise.all([
      pg.sql`select * from payment_instructions order by id`,
      pg.sql`select * from cid_mappings order by cid`,
    ]).then(([instructions, cids]) => JSON.stringify({ instructions: [...instructions], cids: [...cids] }));
  }

  return { app, db, engine: engineDb, stores, settings, tokens, token, call, create, snapshot, logLines };
}
