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

import { and, asc, count, desc, eq, gt, inArray, lt, type SQL, sql } from "drizzle-orm";
import { parseCid } from "../content/cid";
import type { Awaitable, MaybePromise } from "../db/awaitable";
import type { CatalogChanges } from "../db/changes";
import type { Db, DbOrTx } from "../db/client";
import { cidMappings, paymentInstructions } from "../db/schema";
import {
  ACCESS_RULE,
  type AccessScope,
  DEFAULT_ACCESS,
  DEFAULT_ACCESS_SCOPE,
  isAccessScope,
  parseAccessPolicy,
} from "../entitlements/policy";
import { badRequest, conflict, invalidInput, notFound } from "../http/errors";
import {
  changed,
  type FileInstruction,
  type FileSyncResult,
  fileSyncStatements,
  syncFileInstructions,
} from "./file-sync";
import { decodePageToken, encodePageToken } from "./page-token";
import type { StoredRequirement } from "./requirements";

/** An instruction as the rest of cidgate sees it. */
export interface InstructionRecord {
  id: string;
  version: number;
  name: string;
  description: string | null;
  requirements: StoredRequirement[];
  /** "api", or "file:<path relative to the config folder>#<key>" for pricing-file instructions. */
  source: string;
  /** What a payment buys beyond its proof: "forever", "once" or a duration ("30d"); parse with parseAccessPolicy. */
  access: string;
  /** Snake case as on the wire: the name the purchase code was written against. */
  access_scope: AccessScope;
  createdAt: string;
  updatedAt: string;
}

export interface CidRecord {
  cid: string;
  instructionId: string;
  source: string;
  createdAt: string;
}

/**
 * Writes take SQLite's write lock up front: a read-then-write transaction that
 * started deferred could find another process (a pricing sync from the CLI)
 * committed in between and fail with SQLITE_BUSY instead of waiting.
 */
const WRITE = { behavior: "immediate" } as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function toRecord(row: typeof paymentInstructions.$inferSelect): InstructionRecord {
  return {
    id: row.id,
    version: row.version,
    name: row.name,
    description: row.description,
    requirements: row.requirements as StoredRequirement[],
    source: row.source,
    access: row.access,
    access_scope: row.accessScope,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** The access fields as given, checked: a 400 naming each bad one (the wire names, which the CLI and YAML share). */
function checkAccess(input: { access?: string; access_scope?: string }): void {
  const errors: { path: string; message: string }[] = [];
  if (input.access !== undefined && !parseAccessPolicy(input.access))
    errors.push({ path: "access", message: ACCESS_RULE });
  if (input.access_scope !== undefined && !isAccessScope(input.access_scope))
    errors.push({ path: "access_scope", message: 'must be "cid" or "instruction"' });
  if (errors.length) throw invalidInput(errors);
}

/** A CID as stored (v1 in base32, v0 as Qm...), or a 400 naming `field`. */
export function normalizeCid(text: string, field = "cid"): string {
  const cid = parseCid(text);
  if (!cid)
    throw badRequest(`${field} is not a valid CID`, [{ path: field, message: "is not a valid CID (v0 or v1)" }]);
  return cid.toString();
}

/** Where a pricing-file instruction is declared, for a 409 message that says what to edit. */
function describeFileSource(source: string): string {
  const m = /^file:(.*?)(?:#(.*))?$/.exec(source);
  if (!m) return `is managed by "${source}"`;
  return `is declared in the pricing file ${m[1]}${m[2] ? ` (key "${m[2]}")` : ""} in the config folder; edit that file instead`;
}

function assertApiManaged(row: { id: string; source: string }) {
  if (row.source !== "api") throw conflict(`payment instruction ${row.id} ${describeFileSource(row.source)}`);
}

/** Works on the database and inside a transaction (the writes below read the row they change in theirs). */
function findRow(q: DbOrTx, id: string) {
  if (!UUID.test(id)) return undefined;
  return q.select().from(paymentInstructions).where(eq(paymentInstructions.id, id.toLowerCase())).get();
}

function requireRow(q: DbOrTx, id: string) {
  const row = findRow(q, id);
  if (!row) throw notFound(`no payment instruction ${id}`);
  return row;
}

export interface ListInstructionsOptions {
  limit: number;
  pageToken?: string;
  cid?: string;
  name?: string;
  id?: string;
}

export interface CreateInstructionInput {
  name: string;
  description?: string | null;
  requirements: StoredRequirement[];
  /** Default "forever". */
  access?: string;
  /** Default "cid". */
  access_scope?: AccessScope;
}

export interface UpdateInstructionInput {
  name?: string;
  /** null or "" clears it. */
  description?: string | null;
  requirements?: StoredRequirement[];
  access?: string;
  access_scope?: AccessScope;
}

/** The SQLite store, synchronous; the app holds `InstructionStore`, which a PostgreSQL store implements too. */
export type SqliteInstructionStore = ReturnType<typeof createInstructionStore>;
export type InstructionStore = Awaitable<SqliteInstructionStore, "syncFiles"> & {
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
    const where: SQL[] = [];
    if (opts.pageToken !== undefined) where.push(lt(paymentInstructions.id, decodePageToken("i", opts.pageToken)));
    if (opts.name !== undefined) where.push(eq(paymentInstructions.name, opts.name));
    if (opts.id !== undefined) {
      if (!UUID.test(opts.id)) throw badRequest("id is not a valid id", [{ path: "id", message: "must be a UUID" }]);
      where.push(eq(paymentInstructions.id, opts.id.toLowerCase()));
    }
    if (opts.cid !== undefined) {
      const cid = normalizeCid(opts.cid);
      where.push(
        inArray(
          paymentInstructions.id,
          db.select({ id: cidMappings.instructionId }).from(cidMappings).where(eq(cidMappings.cid, cid)),
        ),
      );
    }
    const rows = db
      .select()
      .from(paymentInstructions)
      .where(and(...where))
      .orderBy(desc(paymentInstructions.id))
      .limit(opts.limit + 1)
      .all();
    const items = rows.slice(0, opts.limit).map(toRecord);
    const more = rows.length > opts.limit;
    return more ? { items, nextPageToken: encodePageToken("i", items[items.length - 1].id) } : { items };
  }

  function create(input: CreateInstructionInput, now = new Date()): InstructionRecord {
    checkAccess(input);
    const at = now.toISOString();
    const row = {
      id: Bun.randomUUIDv7(),
      version: 1,
      name: input.name,
      description: input.description || null,
      requirements: input.requirements,
      source: "api",
      access: input.access ?? DEFAULT_ACCESS,
      accessScope: input.access_scope ?? DEFAULT_ACCESS_SCOPE,
      createdAt: at,
      updatedAt: at,
    };
    db.insert(paymentInstructions).values(row).run();
    changes.bump();
    return toRecord(row);
  }

  /** Applies the given fields; the version goes up by one only when something actually changed. */
  function update(id: string, patch: UpdateInstructionInput, now = new Date()): InstructionRecord {
    if (
      patch.name === undefined &&
      patch.description === undefined &&
      patch.requirements === undefined &&
      patch.access === undefined &&
      patch.access_scope === undefined
    ) {
      throw badRequest("give at least one of name, description, payment_requirements, access, access_scope", [
        {
          path: "(body)",
          message: "must contain at least one of name, description, payment_requirements, access, access_scope",
        },
      ]);
    }
    checkAccess(patch);
    const { record, wrote } = db.transaction((tx) => {
      const row = requireRow(tx, id);
      assertApiManaged(row);
      const next = {
        name: patch.name ?? row.name,
        description: patch.description === undefined ? row.description : patch.description || null,
        requirements: patch.requirements ?? (row.requirements as StoredRequirement[]),
        access: patch.access ?? row.access,
        accessScope: patch.access_scope ?? row.accessScope,
      };
      // A new policy is a change like any other: what a payment buys is part of the offer.
      const changed =
        next.name !== row.name ||
        next.description !== row.description ||
        next.access !== row.access ||
        next.accessScope !== row.accessScope ||
        JSON.stringify(next.requirements) !== JSON.stringify(row.requirements);
      if (!changed) return { record: toRecord(row), wrote: false };
      const updated = { ...next, version: row.version + 1, updatedAt: now.toISOString() };
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
      if (attached > 0) {
        throw conflict(
          `payment instruction ${row.id} still has ${attached} CID${attached === 1 ? "" : "s"} attached; detach them first`,
        );
      }
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
        const where =
          existing.source === "api" ? "" : ` (declared in the pricing file ${existing.source.replace(/^file:/, "")})`;
        throw conflict(
          `CID ${cid} is already attached to payment instruction ${existing.instructionId}${where}; a CID has at most one instruction`,
        );
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
      if (gone.length === 0) throw notFound(`CID ${cid} is not attached to payment instruction ${row.id}`);
    }, WRITE);
    changes.bump();
  }

  /** CIDs of an instruction in CID order (a stable key for keyset paging). */
  function listCids(
    id: string,
    opts: { limit: number; pageToken?: string },
  ): { cids: string[]; nextPageToken?: string } {
    const row = requireRow(db, id);
    const where: SQL[] = [eq(cidMappings.instructionId, row.id)];
    if (opts.pageToken !== undefined) where.push(gt(cidMappings.cid, decodePageToken("c", opts.pageToken)));
    const rows = db
      .select({ cid: cidMappings.cid })
      .from(cidMappings)
      .where(and(...where))
      .orderBy(asc(cidMappings.cid))
      .limit(opts.limit + 1)
      .all();
    const cids = rows.slice(0, opts.limit).map((r) => r.cid);
    return rows.length > opts.limit ? { cids, nextPageToken: encodePageToken("c", cids[cids.length - 1]) } : { cids };
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
