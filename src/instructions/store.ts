/**
 * Payment instructions and their CIDs: the only writer of payment_instructions
 * and cid_mappings. A store is made once per app from a database handle and
 * the app's change signal (`createInstructionStore(db, changes)`); it holds
 * its prepared statements and bumps the signal once per committed write, so
 * the gateway's catalog drops what it cached. Serves the management API, the
 * one read the gateway needs (`forCid`) and the pricing files' bulk reconcile
 * (`syncFiles`, in file-sync.ts). Failures are ApiError (a status number, no
 * HTTP types).
 *
 * Every write is one synchronous transaction (bun:sqlite rolls back only a
 * synchronous callback), so a rejected request leaves the database unchanged.
 * Lists use keyset pagination on the UUIDv7 id (newest first): no OFFSET scan,
 * and pages stay correct while rows are added or removed between calls.
 */

import { and, asc, count, desc, eq, inArray, sql } from "drizzle-orm";
import { parseCid } from "../content/cid";
import type { Awaitable, MaybePromise } from "../db/awaitable";
import type { CatalogChanges } from "../db/changes";
import type { Db, DbOrTx } from "../db/client";
import { cidMappings, paymentInstructions } from "../db/schema";
import {
  changed,
  type FileInstruction,
  type FileSyncResult,
  fileSyncStatements,
  syncFileInstructions,
} from "./file-sync";
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

export type {
  CidRecord,
  CreateInstructionInput,
  InstructionRecord,
  ListInstructionsOptions,
  UpdateInstructionInput,
} from "./records";
export { normalizeCid } from "./records";

/**
 * Writes take SQLite's write lock up front: a read-then-write transaction that
 * started deferred could find another process (a pricing sync from the CLI)
 * committed in between and fail with SQLITE_BUSY instead of waiting.
 */
const WRITE = { behavior: "immediate" } as const;

/** Works on the database and inside a transaction (the writes below read the row they change in theirs). */
function findRow(q: DbOrTx, id: string) {
  const key = instructionKey(id);
  if (!key) return undefined;
  return q.select().from(paymentInstructions).where(eq(paymentInstructions.id, key)).get();
}

function requireRow(q: DbOrTx, id: string) {
  const row = findRow(q, id);
  if (!row) throw instructionNotFound(id);
  return row;
}

/** The SQLite store, synchronous; the app holds `InstructionStore`, which a PostgreSQL store implements too. */
export type SqliteInstructionStore = ReturnType<typeof createInstructionStore>;
export type InstructionStore = Omit<Awaitable<SqliteInstructionStore>, "syncFiles"> & {
  /** Generic, so mapped by hand (a mapped type drops the type parameter). */
  syncFiles<I extends FileInstruction>(desired: readonly I[], now?: Date): MaybePromise<FileSyncResult<I>>;
};

/**
 * The store over `db`. `changes` is the app's catalog signal: every method
 * that commits a write bumps it once, after the commit.
 */
export function createInstructionStore(db: Db, changes: CatalogChanges) {
  /** The gateway asks on every paid request: one prepared statement, built with the store. */
  const byCid = db
    .select({ instruction: paymentInstructions })
    .from(cidMappings)
    .innerJoin(paymentInstructions, eq(paymentInstructions.id, cidMappings.instructionId))
    .where(eq(cidMappings.cid, sql.placeholder("cid")))
    .prepare();
  const fileSync = fileSyncStatements(db.sqlite);

  /** The instruction a CID is attached to, for the gateway. Undefined for an unknown or invalid CID. */
  function forCid(cid: string): InstructionRecord | undefined {
    const parsed = parseCid(cid);
    if (!parsed) return undefined;
    const row = byCid.get({ cid: parsed.toString() });
    return row ? toRecord(row.instruction) : undefined;
  }

  function get(id: string): InstructionRecord {
    return toRecord(requireRow(db, id));
  }

  function list(opts: ListInstructionsOptions): { items: InstructionRecord[]; nextPageToken?: string } {
    const where = listWhere(opts, paymentInstructions, (cid) =>
      inArray(
        paymentInstructions.id,
        db.select({ id: cidMappings.instructionId }).from(cidMappings).where(eq(cidMappings.cid, cid)),
      ),
    );
    const rows = db
      .select()
      .from(paymentInstructions)
      .where(where)
      .orderBy(desc(paymentInstructions.id))
      .limit(opts.limit + 1)
      .all();
    return instructionPage(rows, opts.limit);
  }

  function create(input: CreateInstructionInput, now = new Date()): InstructionRecord {
    const row = newInstructionRow(input, now);
    db.insert(paymentInstructions).values(row).run();
    changes.bump();
    return toRecord(row);
  }

  /** Applies the given fields; the version goes up by one only when something actually changed. */
  function update(id: string, patch: UpdateInstructionInput, now = new Date()): InstructionRecord {
    checkPatch(patch);
    const { record, wrote } = db.transaction((tx) => {
      const row = requireRow(tx, id);
      assertApiManaged(row);
      const updated = applyPatch(row, patch, now);
      if (!updated) return { record: toRecord(row), wrote: false };
      tx.update(paymentInstructions).set(updated).where(eq(paymentInstructions.id, row.id)).run();
      return { record: toRecord({ ...row, ...updated }), wrote: true };
    }, WRITE);
    if (wrote) changes.bump();
    return record;
  }

  /** Deletes an instruction with no CIDs attached (409 otherwise). */
  function remove(id: string): void {
    db.transaction((tx) => {
      const row = requireRow(tx, id);
      assertApiManaged(row);
      const attached =
        tx.select({ n: count() }).from(cidMappings).where(eq(cidMappings.instructionId, row.id)).get()?.n ?? 0;
      if (attached > 0) throw stillAttached(row.id, attached);
      tx.delete(paymentInstructions).where(eq(paymentInstructions.id, row.id)).run();
    }, WRITE);
    changes.bump();
  }

  /**
   * Attaches a CID. Idempotent for the same instruction (answers the existing
   * association); 409 when the CID belongs to another instruction.
   */
  function attachCid(id: string, cidText: string, now = new Date()): CidRecord {
    const cid = normalizeCid(cidText);
    const { mapping, wrote } = db.transaction((tx) => {
      const row = requireRow(tx, id);
      assertApiManaged(row);
      const existing = tx.select().from(cidMappings).where(eq(cidMappings.cid, cid)).get();
      if (existing) {
        if (existing.instructionId === row.id) return { mapping: existing, wrote: false };
        throw cidTaken(cid, existing);
      }
      const mapping = { cid, instructionId: row.id, source: "api", createdAt: now.toISOString() };
      tx.insert(cidMappings).values(mapping).run();
      return { mapping, wrote: true };
    }, WRITE);
    if (wrote) changes.bump();
    return mapping;
  }

  function detachCid(id: string, cidText: string): void {
    const cid = normalizeCid(cidText);
    db.transaction((tx) => {
      const row = requireRow(tx, id);
      assertApiManaged(row);
      const gone = tx
        .delete(cidMappings)
        .where(and(eq(cidMappings.cid, cid), eq(cidMappings.instructionId, row.id)))
        .returning({ cid: cidMappings.cid })
        .all();
      if (gone.length === 0) throw cidNotAttached(cid, row.id);
    }, WRITE);
    changes.bump();
  }

  /** CIDs of an instruction in CID order (a stable key for keyset paging). */
  function listCids(
    id: string,
    opts: { limit: number; pageToken?: string },
  ): { cids: string[]; nextPageToken?: string } {
    const row = requireRow(db, id);
    const rows = db
      .select({ cid: cidMappings.cid })
      .from(cidMappings)
      .where(cidsWhere(row.id, opts.pageToken, cidMappings))
      .orderBy(asc(cidMappings.cid))
      .limit(opts.limit + 1)
      .all();
    return cidPage(rows, opts.limit);
  }

  /** Whether any instruction came from a pricing file (a missing config folder must not delete them). */
  function hasFileInstructions(): boolean {
    return fileSync.anyFileInstruction.get() !== null;
  }

  /**
   * Makes the pricing files' instructions and CIDs match `desired`, in one
   * transaction (see file-sync.ts); bumps the signal once when it wrote.
   */
  function syncFiles<I extends FileInstruction>(desired: readonly I[], now = new Date()): FileSyncResult<I> {
    const result = syncFileInstructions(db.sqlite, fileSync, desired, now);
    // The gateway's catalog must not answer from what this just replaced.
    if (result.ok && changed(result.changes)) changes.bump();
    return result;
  }

  return { forCid, get, list, create, update, remove, attachCid, detachCid, listCids, hasFileInstructions, syncFiles };
}
