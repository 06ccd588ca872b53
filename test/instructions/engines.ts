/**
 * The app's stores over either engine, for the instruction, pricing and
 * catalog tests: SQLite as the app makes them (createStores), or the
 * PostgreSQL instruction store (createPgInstructionStore) over a fresh
 * database of the test server, with the catalog signal fed by
 * catalog_generation's poll, as src/stores-pg.ts wires them.
 *
 * On PostgreSQL only the instructions (and the signal) are PostgreSQL's:
 * these tests read and write nothing else, and the other stores stay on the
 * replica's local SQLite until stores-pg.ts assembles them all.
 *
 * `rows`, `mappings` and `writeMark` read the tables the same way on both
 * engines; `writeMark` moves when any row of them is written: SQLite's
 * total_changes(), or on PostgreSQL catalog_generation and every row's
 * xmin/ctid (an UPDATE that sets the same values still makes a new row
 * version, so "no row touched" is what it checks).
 */
import { createContentStore } from "../../src/content/store";
import { pollCatalogGeneration } from "../../src/db/catalog-generation-pg";
import { createCatalogChanges } from "../../src/db/changes";
import { type Db, openDb } from "../../src/db/client";
import { openPg, type Pg } from "../../src/db/pg";
import { createPgInstructionStore } from "../../src/instructions/store-pg";
import type { Settings } from "../../src/settings";
import { createStores, type SqliteStores, type Stores } from "../../src/stores";
import { ENGINES, type Engine } from "../support/engines";
import { eventually } from "../support/eventually";
import { createTestDatabase, pgAvailable, testServer } from "../support/postgres";

export type { Engine } from "../support/engines";

/**
 * Both engines, or SQLite alone when PostgreSQL is not installed (said loudly by pgAvailable). The
 * server starts here, before any test: its initdb takes seconds, more than a test's time limit.
 */
export async function enginesHere(suite: string): Promise<readonly Engine[]> {
  if (!(await pgAvailable(suite))) return ENGINES.filter((e) => e === "sqlite");
  await testServer();
  return ENGINES;
}

export interface InstructionRow {
  id: string;
  version: number;
  name: string;
  source: string;
  /** The JSON text as stored. */
  requirements: string;
}

export interface EngineStores<S extends Stores = Stores> {
  engine: Engine;
  stores: S;
  /** SQLite: the database; PostgreSQL: the replica's local SQLite (its content index). */
  local: Db;
  /** PostgreSQL only. */
  pg?: Pg;
  /** Where a second process (a restart; on PostgreSQL another replica) opens the same database. */
  location: string;
  rows(): Promise<InstructionRow[]>;
  mappings(): Promise<{ cid: string; instruction_id: string }[]>;
  writeMark(): Promise<string>;
  /**
   * Resolves once the catalog signal's `elsewhere()` has caught up with this database's own writes
   * (PostgreSQL: the poll has read the current catalog_generation; SQLite: at once, as a connection's
   * own commits do not move data_version). A test that checks a cached answer survives waits here first.
   */
  settled(): Promise<void>;
  close(): Promise<void>;
}

const open: EngineStores[] = [];
/**
 * Closes every EngineStores opened so far (a PostgreSQL pool holds server connections): each test file
 * calls `afterEach(closeEngineStores)`. A hook registered here would run for the first file that imports
 * this module only, the module being evaluated once per `bun test` process.
 */
export async function closeEngineStores(): Promise<void> {
  for (const s of open.splice(0)) await s.close();
}

/**
 * The stores over `engine`. `location`: a SQLite file (default ":memory:"),
 * or a PostgreSQL URL already made (default: this file's database, emptied).
 */
export async function engineStores(
  engine: "sqlite",
  settings: Pick<Settings, "contentDir">,
  location?: string,
): Promise<EngineStores<SqliteStores>>;
export async function engineStores(
  engine: Engine,
  settings: Pick<Settings, "contentDir">,
  location?: string,
): Promise<EngineStores>;
export async function engineStores(
  engine: Engine,
  settings: Pick<Settings, "contentDir">,
  location?: string,
): Promise<EngineStores> {
  const made =
    engine === "sqlite" ? sqliteStores(settings, location ?? ":memory:") : await pgStores(settings, location);
  // Closed once, whether the test closes it (a restart) or closeEngineStores does.
  const close = made.close;
  let closed: Promise<void> | undefined;
  made.close = () => {
    closed ??= close();
    return closed;
  };
  open.push(made);
  return made;
}

function sqliteStores(settings: Pick<Settings, "contentDir">, file: string): EngineStores<SqliteStores> {
  const db = openDb(file);
  const all = <T>(query: string) => db.sqlite.query<T, []>(query).all();
  return {
    engine: "sqlite",
    stores: createStores(db, settings),
    local: db,
    location: file,
    rows: async () =>
      all<InstructionRow>("SELECT id, version, name, source, requirements FROM payment_instructions ORDER BY source"),
    mappings: async () => all("SELECT cid, instruction_id FROM cid_mappings ORDER BY cid"),
    writeMark: async () => String(all<{ n: number }>("SELECT total_changes() AS n")[0].n),
    settled: async () => {},
    close: async () => db.sqlite.close(),
  };
}

/**
 * One migrated database per test file, emptied for each test that asks for a new one: making and
 * migrating a database costs about 1.3 s on a busy 2-core machine, emptying two tables a few ms.
 */
let reusable: string | undefined;

async function pgStores(settings: Pick<Settings, "contentDir">, url?: string): Promise<EngineStores> {
  const location = url ?? reusable ?? (reusable = await createTestDatabase());
  const pg = await openPg(location);
  // The previous test's pools are closed (closeEngineStores): nothing else writes these tables now.
  if (url === undefined) await pg.sql`TRUNCATE cid_mappings, payment_instructions`;
  const local = openDb(":memory:");
  const poll = pollCatalogGeneration(pg);
  const changes = createCatalogChanges(poll.current);
  const stores: Stores = {
    ...createStores(local, settings),
    changes,
    content: createContentStore(local, settings, changes),
    instructions: createPgInstructionStore(pg, changes),
  };
  return {
    engine: "postgres",
    stores,
    local,
    pg,
    location,
    rows: () => pg.sql<InstructionRow[]>`
      SELECT id, version, name, source, requirements::text AS requirements FROM payment_instructions ORDER BY source`,
    mappings: () => pg.sql<{ cid: string; instruction_id: string }[]>`
      SELECT cid, instruction_id FROM cid_mappings ORDER BY cid`,
    writeMark: async () =>
      JSON.stringify(
        await pg.sql`
          SELECT 'generation' AS t, generation::text AS v FROM catalog_generation
          UNION ALL SELECT 'i:' || id, xmin::text || ctid::text FROM payment_instructions
          UNION ALL SELECT 'm:' || cid, xmin::text || ctid::text FROM cid_mappings
          ORDER BY 1`,
      ),
    settled: () =>
      eventually(async () => {
        const [row] = await pg.sql<{ g: string }[]>`SELECT generation::text AS g FROM catalog_generation`;
        return poll.current() === Number(row.g);
      }, "the catalog_generation poll catching up"),
    close: async () => {
      poll.stop();
      await pg.close();
      local.sqlite.close();
    },
  };
}
