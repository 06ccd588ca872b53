/**
 * Raw SQL on either engine of a test (test/support/engines.ts), for what the
 * statistics' tests write and read beside the code under test: payments rows
 * as other writers make them, the funnel tables as flushed. Parameters are
 * `?` in the text (numbered `$n` for PostgreSQL here). Rows come back as the
 * engine gives them: bigint columns as strings on PostgreSQL, so a test
 * compares such columns through Number() or BigInt().
 */
import type { Db } from "../../src/db/client";
import type { Pg } from "../../src/db/pg";
import type { EngineDb } from "../support/engines";

export interface EngineSql {
  /** Rows of a query. */
  all<R = Record<string, unknown>>(text: string, ...params: unknown[]): Promise<R[]>;
  /** A statement. */
  run(text: string, ...params: unknown[]): Promise<void>;
  /** Statements in one transaction that `fn` ends by throwing: nothing of them stays. */
  rolledBack(fn: (run: (text: string, ...params: unknown[]) => Promise<void>) => Promise<void>): Promise<void>;
}

const numbered = (text: string) => {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
};

export function engineSql(e: EngineDb): EngineSql {
  if (e.engine === "sqlite") {
    const { sqlite } = e.sqlite;
    const run = async (text: string, ...params: unknown[]) => {
      sqlite.query(text).run(...(params as never[]));
    };
    return {
      all: async <R>(text: string, ...params: unknown[]) => sqlite.query(text).all(...(params as never[])) as R[],
      run,
      async rolledBack(fn) {
        // bun:sqlite commits at a callback's first await: BEGIN and ROLLBACK by hand (every step below is synchronous).
        sqlite.exec("BEGIN");
        try {
          await fn(run);
        } finally {
          sqlite.exec("ROLLBACK");
        }
      },
    };
  }
  const { pg } = e;
  return {
    all: async <R>(text: string, ...params: unknown[]) => [...(await pg.sql.unsafe(numbered(text), params))] as R[],
    run: async (text: string, ...params: unknown[]) => {
      await pg.sql.unsafe(numbered(text), params);
    },
    rolledBack: (fn) =>
      pg.sql.begin(async (tx) => {
        await fn(async (text, ...params) => {
          await tx.unsafe(numbered(text), params);
        });
      }),
  };
}

/** The database handed to createStats: SQLite's Db or the Pg. */
export const statsDatabase = (e: EngineDb): Db | Pg => (e.engine === "sqlite" ? e.sqlite : e.pg);
