/**
 * What `cidgate db copy --to postgres://...` does (db.ts is the command): the
 * SQLite shop's rows into an empty PostgreSQL database, in one PostgreSQL
 * transaction, ids kept, then each identity sequence moved past the largest id,
 * then a verification (rows per table, settled sales and their sum per network
 * and asset, counted on both sides) before the commit. A mismatch rolls the
 * whole copy back: the target is left as empty as it was found.
 *
 * The source is only read: opened read-only, in one read transaction, so the
 * copy is one consistent moment of the ledger even while a server writes (WAL).
 * Rows are read through drizzle with schema.ts and written with schema-pg.ts,
 * which give the same JS values column for column: no conversion here.
 */
import type { Database } from "bun:sqlite";
import { join } from "node:path";
import { getTableColumns, getTableName, is, sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { PgTable } from "drizzle-orm/pg-core";
import { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Pg, PgExecutor } from "../db/pg";
import * as sqliteSchema from "../db/schema";
import * as pgSchema from "../db/schema-pg";

/** A refusal before anything is written (the target has rows, the source is not ready): one line. */
export class CopyRefused extends Error {}

/**
 * The tables copied, parents before children: the foreign keys (cid_mappings -> instructions,
 * entitlements -> payments) stay checked during the copy. Every table of both schemas but
 * content_files (SQLite only: each replica indexes its own content folder) and catalog_generation
 * and leases (PostgreSQL only); `copyPlan` refuses to run if a shared table is missing here.
 */
const COPY_ORDER = [
  pgSchema.paymentInstructions,
  pgSchema.cidMappings,
  pgSchema.payments,
  pgSchema.entitlements,
  pgSchema.paymentIdentifiers,
  pgSchema.paymentResolutions,
  pgSchema.siwxNonces,
  pgSchema.managementTokens,
  pgSchema.webhooks,
  pgSchema.webhookDeliveries,
  pgSchema.salesHourly,
  pgSchema.salesInstructionHourly,
  pgSchema.salesTotals,
  pgSchema.funnelHourly,
  pgSchema.funnelInstructionHourly,
  pgSchema.funnelShopHourly,
] as const;

interface TablePair {
  name: string;
  sqlite: SQLiteTable;
  pg: PgTable;
}

/** The pairs to copy, in COPY_ORDER; throws when the two schemas and the list disagree (a new table). */
export function copyPlan(): TablePair[] {
  const sqliteTables = new Map<string, SQLiteTable>();
  for (const t of Object.values(sqliteSchema) as unknown[])
    if (is(t, SQLiteTable)) sqliteTables.set(getTableName(t), t);
  const pgNames = (Object.values(pgSchema) as unknown[]).flatMap((t) => (is(t, PgTable) ? [getTableName(t)] : []));
  const listed: string[] = COPY_ORDER.map((t) => getTableName(t));
  const shared = pgNames.filter((n) => sqliteTables.has(n));
  const unlisted = shared.filter((n) => !listed.includes(n));
  if (unlisted.length > 0) throw new Error(`db copy does not know where to copy ${unlisted.join(", ")}`);
  return COPY_ORDER.map((pg) => {
    const name = getTableName(pg);
    const sqlite = sqliteTables.get(name);
    if (!sqlite) throw new Error(`db copy: ${name} is not a SQLite table`);
    // Same property -> same column on both sides, or a row read from one would not fit the other.
    const columns = (t: SQLiteTable | PgTable) =>
      Object.entries(getTableColumns(t))
        .map(([key, c]) => `${key}=${c.name}`)
        .sort()
        .join(",");
    if (columns(sqlite) !== columns(pg)) throw new Error(`db copy: ${name} has other columns in the two schemas`);
    return { name, sqlite, pg };
  });
}

/** Throws CopyRefused unless `source` is a cidgate database at this version's schema. */
export function checkSource(source: Database): void {
  const has = (table: string) =>
    source.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== null;
  if (!has("payments") || !has("__drizzle_migrations"))
    throw new CopyRefused("CIDGATE_DB is not a cidgate database (no payments table)");
  const last = source
    .query<{ at: number | null }, []>("SELECT max(created_at) AS at FROM __drizzle_migrations")
    .get()?.at;
  const newest = Math.max(
    ...readMigrationFiles({ migrationsFolder: join(import.meta.dir, "../../drizzle") }).map((m) => m.folderMillis),
  );
  // The copy reads with this version's schema: migrating here would write to the source, and
  // a newer cidgate's columns would be left behind unread.
  if (last === null || last === undefined || Number(last) < newest)
    throw new CopyRefused(
      "CIDGATE_DB was last opened by an older cidgate: start this version on it once (it migrates at start), then copy",
    );
  if (Number(last) > newest)
    throw new CopyRefused("CIDGATE_DB was migrated by a newer cidgate: copy it with that version");
}

/** Rows read and inserted at a time: bounded memory on a large ledger, few round trips. */
const PAGE_ROWS = 5000;

export interface TableCount {
  table: string;
  sqlite: number;
  postgres: number;
}

export interface SettledTotal {
  network: string;
  asset: string;
  sqlite: { sales: number; amount: string };
  postgres: { sales: number; amount: string };
}

export interface CopyReport {
  tables: TableCount[];
  settled: SettledTotal[];
  /** Every count and total agrees: committed. Otherwise rolled back. */
  ok: boolean;
}

class Mismatch extends Error {
  constructor(readonly report: CopyReport) {
    super("the copy does not match its source");
  }
}

/**
 * Copies every table of copyPlan() from `source` (a bun:sqlite connection, read-only is enough)
 * into `pg`, which must be migrated and empty. Resolves to the verification; when `ok` is false
 * nothing was committed. Throws CopyRefused when the target already has rows.
 */
export async function copyToPostgres(source: Database, pg: Pg): Promise<CopyReport> {
  const plan = copyPlan();
  const src = drizzle(source, { schema: sqliteSchema });
  // One read transaction: every table, and the counts verified against, come from one snapshot.
  source.exec("BEGIN");
  try {
    return await pg.transaction(async (tx) => {
      // No other writer while the copy runs, and two copies started together queue here: the
      // second then finds the first's rows and is refused. Reads (a dashboard) may go on.
      await tx.execute(sql.raw(`LOCK TABLE ${plan.map((t) => `"${t.name}"`).join(", ")} IN EXCLUSIVE MODE`));
      const found: string[] = [];
      for (const t of plan) {
        const n = await countPg(tx, t.pg);
        if (n > 0) found.push(`${t.name} ${n}`);
      }
      if (found.length > 0)
        throw new CopyRefused(`the target database is not empty (${found.join(", ")}); db copy fills an empty one`);

      // The sales rollups are copied as they are, with the ledger's rollup triggers off meanwhile
      // (on, they would count each copied settled payment again and collide with the copied rows).
      // Copied rather than rebuilt by the triggers: a copy equals SQLite's rollups whatever history
      // made them (rows left at 0 sales stay, as SQLite keeps them), and costs one multi-row INSERT
      // per page where the triggers would make three upserts per settled payment.
      // ALTER TABLE ... DISABLE TRIGGER USER rather than `SET session_replication_role = replica`:
      // it needs the tables' owner (the role cidgate migrates with), not a superuser, which managed
      // PostgreSQL services do not hand out, and it leaves the foreign keys checked. It is
      // transactional like the rest: a rollback turns them back on too.
      await tx.execute(sql`ALTER TABLE ${pgSchema.payments} DISABLE TRIGGER USER`);
      for (const t of plan) await copyTable(src, tx, t);
      await tx.execute(sql`ALTER TABLE ${pgSchema.payments} ENABLE TRIGGER USER`);
      await moveSequences(tx);

      const report = await verify(source, tx, plan);
      if (!report.ok) throw new Mismatch(report);
      return report;
    });
  } catch (e) {
    if (e instanceof Mismatch) return e.report;
    throw e;
  } finally {
    source.exec("COMMIT");
  }
}

async function countPg(tx: PgExecutor, table: PgTable): Promise<number> {
  const [row] = await tx.execute<{ n: string }>(sql`SELECT count(*) AS n FROM ${table}`);
  return Number(row.n);
}

/**
 * Pages through the SQLite table by rowid (an index walk, however large), inserting each page as
 * one statement with one parameter per column: an array of the page's values as text, each cast
 * to its column's type by PostgreSQL (`unnest($1::text[], ...)`). Measured with 100,000 payments
 * (a loaded 2-core machine, the whole `db copy`): 5.6 s, against 14.7 s with drizzle's multi-row
 * VALUES (18 parameters a row; half of the insert time went to building the statement);
 * PostgreSQL's own insert of 20,000 such rows took 0.64 s of the 1.15 s. The rows are read
 * through drizzle (schema.ts), so the text is of the JS values every store reads: a json
 * column's parsed value written back as JSON, a boolean as true/false.
 */
async function copyTable(src: ReturnType<typeof drizzle<typeof sqliteSchema>>, tx: PgExecutor, t: TablePair) {
  const columns = getTableColumns(t.sqlite);
  const pgColumns = getTableColumns(t.pg);
  const keys = Object.keys(columns);
  const names = keys.map((k) => sql.identifier(pgColumns[k].name));
  const casts = keys.map((k, i) => sql.raw(`c${i}::${pgColumns[k].getSQLType()}`));
  const json = keys.map((k) => pgColumns[k].getSQLType() === "json");
  const text = (v: unknown, i: number) =>
    v === null || v === undefined ? null : json[i] ? JSON.stringify(v) : String(v);
  let after = 0;
  for (;;) {
    const rows = src
      .select({ ...columns, rowid_: sql<number>`rowid` })
      .from(t.sqlite)
      .where(sql`rowid > ${after}`)
      .orderBy(sql`rowid`)
      .limit(PAGE_ROWS)
      .all() as Record<string, unknown>[];
    if (rows.length === 0) return;
    after = rows[rows.length - 1].rowid_ as number;
    // sql.param: the array is one parameter (drizzle would spread a bare array into a list).
    const arrays = keys.map((k, i) => sql`${sql.param(rows.map((r) => text(r[k], i)))}::text[]`);
    await tx.execute(
      sql`INSERT INTO ${t.pg} (${sql.join(names, sql`, `)}) SELECT ${sql.join(casts, sql`, `)} FROM unnest(${sql.join(arrays, sql`, `)}) AS u(${sql.raw(keys.map((_, i) => `c${i}`).join(", "))})`,
    );
    if (rows.length < PAGE_ROWS) return;
  }
}

/**
 * Each identity column's sequence moved to its table's largest id + 1 (1 on an empty table):
 * the copy inserted the ids, which does not move the sequence, and the next sale must not
 * collide with a copied one. setval is the one thing a rollback keeps (sequences are not
 * transactional): after a copy that did not verify, the empty target's ids start higher, which
 * harms nothing, and the next copy sets them again.
 */
async function moveSequences(tx: PgExecutor): Promise<void> {
  const identities = await tx.execute<{ table_name: string; column_name: string }>(sql`
    SELECT table_name, column_name FROM information_schema.columns
    WHERE table_schema = current_schema() AND is_identity = 'YES' ORDER BY table_name`);
  for (const { table_name: table, column_name: column } of identities) {
    await tx.execute(
      sql`SELECT setval(pg_get_serial_sequence(${`"${table}"`}, ${column}), coalesce(max(${sql.identifier(column)}), 0) + 1, false) FROM ${sql.identifier(table)}`,
    );
  }
}

/** Counts on both sides, each side counting itself: SQLite in the read snapshot, PostgreSQL in the copy's transaction. */
async function verify(source: Database, tx: PgExecutor, plan: TablePair[]): Promise<CopyReport> {
  const tables: TableCount[] = [];
  for (const t of plan) {
    const sqlite = source.query<{ n: number }, []>(`SELECT count(*) AS n FROM "${t.name}"`).get()!.n;
    tables.push({ table: t.name, sqlite, postgres: await countPg(tx, t.pg) });
  }

  // Sums as exact decimals: SQLite's sum() of text would be a float past 2^53, so the SQLite side
  // adds BigInts here; PostgreSQL's numeric is exact.
  const key = (network: string, asset: string) => `${network}\u0000${asset}`;
  const totals = new Map<string, SettledTotal>();
  const entry = (network: string, asset: string) => {
    let e = totals.get(key(network, asset));
    if (!e) {
      e = { network, asset, sqlite: { sales: 0, amount: "0" }, postgres: { sales: 0, amount: "0" } };
      totals.set(key(network, asset), e);
    }
    return e;
  };
  const sums = new Map<string, bigint>();
  for (const p of source
    .query<{ network: string; asset: string; amount: string }, []>(
      "SELECT network, asset, amount FROM payments WHERE state = 'settled'",
    )
    .iterate()) {
    const e = entry(p.network, p.asset);
    e.sqlite.sales++;
    const k = key(p.network, p.asset);
    sums.set(k, (sums.get(k) ?? 0n) + BigInt(p.amount));
  }
  for (const [k, sum] of sums) totals.get(k)!.sqlite.amount = sum.toString();
  const pgTotals = await tx.execute<{ network: string; asset: string; sales: string; amount: string }>(sql`
    SELECT network, asset, count(*) AS sales, sum(amount::numeric)::text AS amount
    FROM ${pgSchema.payments} WHERE state = 'settled' GROUP BY network, asset`);
  for (const r of pgTotals) entry(r.network, r.asset).postgres = { sales: Number(r.sales), amount: r.amount };

  const settled = [...totals.values()].sort((a, b) =>
    a.network === b.network ? (a.asset < b.asset ? -1 : 1) : a.network < b.network ? -1 : 1,
  );
  const ok =
    tables.every((t) => t.sqlite === t.postgres) &&
    settled.every((s) => s.sqlite.sales === s.postgres.sales && s.sqlite.amount === s.postgres.amount);
  return { tables, settled, ok };
}
