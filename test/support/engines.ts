/**
 * One test suite, two engines: what a store or app test runs against, once
 * on SQLite (`:memory:`) and once on a real PostgreSQL server
 * (test/support/postgres.ts: Debian's binaries, a fresh database per call).
 *
 *   describe.each(ENGINES)("%s", (engine) => {
 *     let db: EngineDb;
 *     beforeEach(async () => { db = await openEngine(engine); });
 *     afterEach(() => db.close());
 *     ...
 *   });
 *
 * Without PostgreSQL on the machine the postgres half is skipped loudly (or
 * fails, with CIDGATE_REQUIRE_SYSTEM_PARTS=1, as CI runs): see pgAvailable.
 */
import { openDb } from "../../src/db/client";
import { openPg, type Pg } from "../../src/db/pg";
import { createTestDatabase } from "./postgres";

export type Engine = "sqlite" | "postgres";
export const ENGINES: readonly Engine[] = ["sqlite", "postgres"];

export type EngineDb =
  | { engine: "sqlite"; sqlite: ReturnType<typeof openDb>; close(): Promise<void> }
  | { engine: "postgres"; pg: Pg; url: string; close(): Promise<void> };

export async function openEngine(engine: Engine): Promise<EngineDb> {
  if (engine === "sqlite") {
    const sqlite = openDb(":memory:");
    return { engine, sqlite, close: async () => sqlite.sqlite.close() };
  }
  const url = await createTestDatabase();
  const pg = await openPg(url);
  return { engine, pg, url, close: () => pg.close() };
}
