/**
 * Payment instructions and their CIDs on PostgreSQL (CIDGATE_DB=postgres://):
 * store.ts's store, method for method, answering with promises. What both
 * decide (records, checks, errors, patches, pages) is records.ts, and the
 * pricing files' reconcile is file-sync-plan.ts run by file-sync-pg.ts.
 *
 * Every query goes through `pg.q()`, so a caller's `pg.transaction` takes
 * these writes in. Each write is one transaction that first locks the
 * instruction row it changes (SELECT ... FOR UPDATE): what SQLite's
 * "immediate" write lock gives the SQLite store. Without it, two replicas
 * patching one instruction would both write version n+1, and a delete could
 * count no CIDs while another replica attaches one (the insert then holds the
 * row's key-share lock and the delete fails on the foreign key: a 500
 * instead of the 409).
 */
import { and, asc, count, desc, eq, inArray, like, sql } from "drizzle-orm";
import { parseCid } from "../content/cid";
import type { Async } from "../db/awaitable";
import type { CatalogChanges } from "../db/changes";
import type { Pg } from "../db/pg";
import { cidMappings, paymentInstructions } from "../db/schema-pg";
import { FILE_SYNC_LOCK_KEY, syncFileInstructionsPg } from "./file-sync-pg";
import { changed, type FileInstruction, type FileSyncResult } from "./file-sync-plan";
import {
  applyPatch,
  assertApiManaged,
  type CidRecord,
  type CreateInstructionInput,
  checkPatch,
  cidNotAttached,
  cidPage,
  cidsWhere,
  cidTaken,
  type InstructionRecord,
  instructionKey,
  instructionNotFound,
  instructionPage,
  type ListInstructionsOptions,
  listWhere,
  newInstructionRow,
  normalizeCid,
  stillAttached,
  toRecord,
  type UpdateInstructionInput,
} from "./records";
import type { SqliteInstructionStore } from "./store";

/** The SQLite store's methods, each answering with a promise (syncFiles by hand: generic). */
export type PgInstructionStore = Omit<Async<SqliteInstructionStore>, "syncFiles"> & {
  syncFiles<I extends FileInstruction>(desired: readonly I[], now?: Date): Promise<FileSyncResult<I>>;
};

/**
 * The store over `pg`. `changes` is the app's catalog signal: every method
 * that commits a write bumps it once, after the commit (other replicas see
 * the write through catalog_generation, db/catalog-generation-pg.ts).
 */
export function createPgInstructionStore(pg: Pg, changes: CatalogChanges): PgInstructionStore {
  /** The row, locked until the transaction ends when `lock` (the writes' read-then-write). */
  async function findRow(id: string, lock = false) {
    const key = instructionKey(id);
    if (!key) return undefined;
    const query = pg.q().select().from(paymentInstructions).where(eq(paymentInstructions.id, key));
    const [row] = lock ? await query.for("update") : await query;
    return row;
  }

  async function requireRow(id: string, lock = false) {
    const row = await findRow(id, lock);
    if (!row) throw instructionNotFound(id);
    return row;
  }

  /** The instruction a CID is attached to, for the gateway. Undefined for an unknown or invalid CID. */
  async function forCid(cid: string): Promise<InstructionRecord | undefined> {
    const parsed = parseCid(cid);
    if (!parsed) return undefined;
    const [row] = await pg
      .q()
      .select({ instruction: paymentInstructions })
      .from(cidMappings)
      .innerJoin(paymentInstructions, eq(paymentInstructions.id, cidMappings.instructionId))
      .where(eq(cidMappings.cid, parsed.toString()));
    return row ? toRecord(row.instruction) : undefined;
  }

  async function get(id: string): Promise<InstructionRecord> {
    return toRecord(await requireRow(id));
  }

  async function list(opts: ListInstructionsOptions): Promise<{ items: InstructionRecord[]; nextPageToken?: string }> {
    const q = pg.q();
    const where = listWhere(opts, paymentInstructions, (cid) =>
      inArray(
        paymentInstructions.id,
        q.select({ id: cidMappings.instructionId }).from(cidMappings).where(eq(cidMappings.cid, cid)),
      ),
    );
    const rows = await q
      .select()
      .from(paymentInstructions)
      .where(where)
      .orderBy(desc(paymentInstructions.id))
      .limit(opts.limit + 1);
    return instructionPage(rows, opts.limit);
  }

  async function create(input: CreateInstructionInput, now = new Date()): Promise<InstructionRecord> {
    const row = newInstructionRow(input, now);
    await pg.q().insert(paymentInstructions).values(row);
    changes.bump();
    return toRecord(row);
  }

  /** Applies the given fields; the version goes up by one only when something actually changed. */
  async function update(id: string, patch: UpdateInstructionInput, now = new Date()): Promise<InstructionRecord> {
    checkPatch(patch);
    const { record, wrote } = await pg.transaction(async () => {
      const q = pg.q();
      const row = await requireRow(id, true);
      assertApiManaged(row);
      const updated = applyPatch(row, patch, now);
      if (!updated) return { record: toRecord(row), wrote: false };
      await q.update(paymentInstructions).set(updated).where(eq(paymentInstructions.id, row.id));
      return { record: toRecord({ ...row, ...updated }), wrote: true };
    });
    if (wrote) changes.bump();
    return record;
  }

  /** Deletes an instruction with no CIDs attached (409 otherwise). */
  async function remove(id: string): Promise<void> {
    await pg.transaction(async () => {
      const q = pg.q();
      const row = await requireRow(id, true);
      assertApiManaged(row);
      const [attached] = await q.select({ n: count() }).from(cidMappings).where(eq(cidMappings.instructionId, row.id));
      if ((attached?.n ?? 0) > 0) throw stillAttached(row.id, attached!.n);
      await q.delete(paymentInstructions).where(eq(paymentInstructions.id, row.id));
    });
    changes.bump();
  }

  /**
   * Attaches a CID. Idempotent for the same instruction (answers the existing
   * association); 409 when the CID belongs to another instruction.
   */
  async function attachCid(id: string, cidText: string, now = new Date()): Promise<CidRecord> {
    const cid = normalizeCid(cidText);
    const { mapping, wrote } = await pg.transaction(async () => {
      const q = pg.q();
      // The pricing reconcile's lock: a reconcile reads who holds each CID, then inserts its mappings;
      // an attach between the two made its insert fail on the key instead of the usual refusal.
      await q.execute(sql`SELECT pg_advisory_xact_lock(${FILE_SYNC_LOCK_KEY.toString()}::bigint)`);
      const row = await requireRow(id, true);
      assertApiManaged(row);
      const holder = async () => {
        const [existing] = await q.select().from(cidMappings).where(eq(cidMappings.cid, cid));
        return existing;
      };
      const answer = (existing: CidRecord) => {
        if (existing.instructionId === row.id) return { mapping: existing, wrote: false };
        throw cidTaken(cid, existing);
      };
      const existing = await holder();
      if (existing) return answer(existing);
      const mapping = { cid, instructionId: row.id, source: "api", createdAt: now.toISOString() };
      // Another replica (or a pricing reload) may attach it between the read above and this insert:
      // the insert then waits for that commit and does nothing, and its holder answers as above.
      const inserted = await q.insert(cidMappings).values(mapping).onConflictDoNothing().returning();
      if (inserted.length === 0) return answer((await holder())!);
      return { mapping, wrote: true };
    });
    if (wrote) changes.bump();
    return mapping;
  }

  async function detachCid(id: string, cidText: string): Promise<void> {
    const cid = normalizeCid(cidText);
    await pg.transaction(async () => {
      const q = pg.q();
      const row = await requireRow(id, true);
      assertApiManaged(row);
      const gone = await q
        .delete(cidMappings)
        .where(and(eq(cidMappings.cid, cid), eq(cidMappings.instructionId, row.id)))
        .returning({ cid: cidMappings.cid });
      if (gone.length === 0) throw cidNotAttached(cid, row.id);
    });
    changes.bump();
  }

  /** CIDs of an instruction in CID order (a stable key for keyset paging; COLLATE "C": SQLite's byte order). */
  async function listCids(
    id: string,
    opts: { limit: number; pageToken?: string },
  ): Promise<{ cids: string[]; nextPageToken?: string }> {
    const row = await requireRow(id);
    const rows = await pg
      .q()
      .select({ cid: cidMappings.cid })
      .from(cidMappings)
      .where(cidsWhere(row.id, opts.pageToken, cidMappings))
      .orderBy(asc(cidMappings.cid))
      .limit(opts.limit + 1);
    return cidPage(rows, opts.limit);
  }

  /** Whether any instruction came from a pricing file (a missing config folder must not delete them). */
  async function hasFileInstructions(): Promise<boolean> {
    const rows = await pg
      .q()
      .select({ id: paymentInstructions.id })
      .from(paymentInstructions)
      .where(like(paymentInstructions.source, "file:%"))
      .limit(1);
    return rows.length > 0;
  }

  /**
   * Makes the pricing files' instructions and CIDs match `desired`, in one
   * transaction serialized across replicas (see file-sync-pg.ts); bumps the
   * signal once when it wrote.
   */
  async function syncFiles<I extends FileInstruction>(desired: readonly I[], now = new Date()) {
    const result = await syncFileInstructionsPg(pg, desired, now);
    // The gateway's catalog must not answer from what this just replaced.
    if (result.ok && changed(result.changes)) changes.bump();
    return result;
  }

  return { forCid, get, list, create, update, remove, attachCid, detachCid, listCids, hasFileInstructions, syncFiles };
}
