/**
 * The ledger's stores over either engine, for tests run once on SQLite and
 * once on PostgreSQL (test/support/engines.ts), and the same database opened
 * as two replicas would open it: two connections to one SQLite file, or two
 * pools to one PostgreSQL database.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../../src/db/client";
import { openPg } from "../../src/db/pg";
import { createPaymentIdentifierStore, type PaymentIdentifierStore } from "../../src/ledger/payment-identifiers";
import { createPgPaymentIdentifierStore } from "../../src/ledger/payment-identifiers-pg";
import { createResolutionStore, type ResolutionStore } from "../../src/ledger/resolutions";
import { createPgResolutionStore } from "../../src/ledger/resolutions-pg";
import { createPaymentStore, type PaymentStore } from "../../src/ledger/store";
import { createPgPaymentStore } from "../../src/ledger/store-pg";
import { ENGINES, type Engine, type EngineDb, openEngine } from "../support/engines";
import { createTestDatabase, pgAvailable } from "../support/postgres";

/** Both engines, or SQLite alone (said loudly on stderr) where PostgreSQL is not installed. */
export const LEDGER_ENGINES: readonly Engine[] = (await pgAvailable("ledger stores on PostgreSQL"))
  ? ENGINES
  : ["sqlite"];

export interface Ledger {
  engine: Engine;
  payments: PaymentStore;
  paymentIdentifiers: PaymentIdentifierStore;
  resolutions: ResolutionStore;
  /** Raw SQL with `?` placeholders, whatever the engine: what a test checks or arranges behind the stores. */
  raw<T = Record<string, unknown>>(text: string, ...params: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

function ledgerOn(db: EngineDb): Ledger {
  if (db.engine === "sqlite") {
    const sqlite = db.sqlite;
    return {
      engine: "sqlite",
      payments: createPaymentStore(sqlite),
      paymentIdentifiers: createPaymentIdentifierStore(sqlite),
      resolutions: createResolutionStore(sqlite),
      raw: async <T>(text: string, ...params: unknown[]) =>
        sqlite.sqlite.query(text).all(...(params as never[])) as T[],
      close: db.close,
    };
  }
  const pg = db.pg;
  return {
    engine: "postgres",
    payments: createPgPaymentStore(pg),
    paymentIdentifiers: createPgPaymentIdentifierStore(pg),
    resolutions: createPgResolutionStore(pg),
    async raw<T>(text: string, ...params: unknown[]) {
      let n = 0;
      return [
        ...(await pg.sql.unsafe(
          text.replace(/\?/g, () => `$${++n}`),
          params,
        )),
      ] as T[];
    },
    close: db.close,
  };
}

/** The ledger on a fresh database of `engine`. */
export async function openLedger(engine: Engine): Promise<Ledger> {
  return ledgerOn(await openEngine(engine));
}

/** One fresh database opened `count` times, as `count` replicas (or processes) would; close closes all. */
export async function openReplicas(engine: Engine, count = 2): Promise<{ replicas: Ledger[]; close(): Promise<void> }> {
  const replicas: Ledger[] = [];
  if (engine === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "cidgate-ledger-"));
    for (let i = 0; i < count; i++) {
      const sqlite = openDb(join(dir, "db.sqlite"));
      replicas.push(ledgerOn({ engine, sqlite, close: async () => sqlite.sqlite.close() }));
    }
    return {
      replicas,
      async close() {
        for (const r of replicas) await r.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const url = await createTestDatabase();
  for (let i = 0; i < count; i++) {
    const pg = await openPg(url);
    replicas.push(ledgerOn({ engine, pg, url, close: () => pg.close() }));
  }
  return {
    replicas,
    async close() {
      for (const r of replicas) await r.close();
    },
  };
}

/** How many rows a table holds (PostgreSQL's count is a bigint, handed over as a string). */
export async function countRows(ledger: Ledger, table: string): Promise<number> {
  const [row] = await ledger.raw<{ n: number | string }>(`SELECT count(*) AS n FROM ${table}`);
  return Number(row.n);
}
