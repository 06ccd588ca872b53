/**
 * Payment instructions and their CIDs: the queries behind the management API
 * and the one read the gateway needs (`getInstructionForCid`). Plain functions
 * over the database; failures are ApiError (a status number, no HTTP types).
 *
 * Every write is one synchronous transaction (bun:sqlite rolls back only a
 * synchronous callback), so a rejected request leaves the database unchanged.
 * Lists use keyset pagination on the UUIDv7 id (newest first): no OFFSET scan,
 * and pages stay correct while rows are added or removed between calls.
 */
import { and, asc, count, desc, eq, gt, inArray, lt, type SQL, sql } from "drizzle-orm";
import { parseCid } from "../content/cid";
import { catalogChanged } from "../db/changes";
import type { Db } from "../db/client";
import { cidMappings, paymentInstructions } from "../db/schema";
import { badRequest, conflict, notFound } from "../http/errors";
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
  return { ...row, requirements: row.requirements as StoredRequirement[] };
}

/** A CID as stored (v1 in base32, v0 as Qm...), or a 400 naming `field`. */
export function normalizeCid(text: string, field = "cid"): string {
  const cid = parseCid(text);
  if (!cid) throw badRequest(`${field} is not a valid CID`, [{ path: field, message: "is not a valid CID (v0 or v1)" }]);
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

function findRow(db: Db, id: string) {
  if (!UUID.test(id)) return undefined;
  return db.select().from(paymentInstructions).where(eq(paymentInstructions.id, id.toLowerCase())).get();
}

function requireRow(db: Db, id: string) {
  const row = findRow(db, id);
  if (!row) throw notFound(`no payment instruction ${id}`);
  return row;
}

/** The gateway asks on every paid request: one prepared statement per database, built once. */
const byCidStatements = new WeakMap<Db, ReturnType<typeof prepareByCid>>();
function prepareByCid(db: Db) {
  return db
    .select({ instruction: paymentInstructions })
    .from(cidMappings)
    .innerJoin(paymentInstructions, eq(paymentInstructions.id, cidMappings.instructionId))
    .where(eq(cidMappings.cid, sql.placeholder("cid")))
    .prepare();
}

/** The instruction a CID is attached to, for the gateway. Undefined for an unknown or invalid CID. */
export function getInstructionForCid(db: Db, cid: string): InstructionRecord | undefined {
  const parsed = parseCid(cid);
  if (!parsed) return undefined;
  let statement = byCidStatements.get(db);
  if (!statement) byCidStatements.set(db, (statement = prepareByCid(db)));
  const row = statement.get({ cid: parsed.toString() });
  return row ? toRecord(row.instruction) : undefined;
}

export function getInstruction(db: Db, id: string): InstructionRecord {
  return toRecord(requireRow(db, id));
}

export interface ListInstructionsOptions {
  limit: number;
  pageToken?: string;
  cid?: string;
  name?: string;
  id?: string;
}

export function listInstructions(db: Db, opts: ListInstructionsOptions): { items: InstructionRecord[]; nextPageToken?: string } {
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

export interface CreateInstructionInput {
  name: string;
  description?: string | null;
  requirements: StoredRequirement[];
}

export function createInstruction(db: Db, input: CreateInstructionInput, now = new Date()): InstructionRecord {
  const at = now.toISOString();
  const row = {
    id: Bun.randomUUIDv7(),
    version: 1,
    name: input.name,
    description: input.description || null,
    requirements: input.requirements,
    source: "api",
    createdAt: at,
    updatedAt: at,
  };
  db.insert(paymentInstructions).values(row).run();
  catalogChanged();
  return row;
}

export interface UpdateInstructionInput {
  name?: string;
  /** null or "" clears it. */
  description?: string | null;
  requirements?: StoredRequirement[];
}

/** Applies the given fields; the version goes up by one only when something actually changed. */
export function updateInstruction(db: Db, id: string, patch: UpdateInstructionInput, now = new Date()): InstructionRecord {
  if (patch.name === undefined && patch.description === undefined && patch.requirements === undefined) {
    throw badRequest("give at least one of name, description, payment_requirements", [
      { path: "(body)", message: "must contain at least one of name, description, payment_requirements" },
    ]);
  }
  return db.transaction((tx) => {
    const row = requireRow(tx as unknown as Db, id);
    assertApiManaged(row);
    const next = {
      name: patch.name ?? row.name,
      description: patch.description === undefined ? row.description : patch.description || null,
      requirements: patch.requirements ?? (row.requirements as StoredRequirement[]),
    };
    const changed =
      next.name !== row.name ||
      next.description !== row.description ||
      JSON.stringify(next.requirements) !== JSON.stringify(row.requirements);
    if (!changed) return toRecord(row);
    const updated = { ...next, version: row.version + 1, updatedAt: now.toISOString() };
    tx.update(paymentInstructions).set(updated).where(eq(paymentInstructions.id, row.id)).run();
    catalogChanged();
    return toRecord({ ...row, ...updated });
  }, WRITE);
}

/** Deletes an instruction with no CIDs attached (409 otherwise). */
export function deleteInstruction(db: Db, id: string): void {
  db.transaction((tx) => {
    const row = requireRow(tx as unknown as Db, id);
    assertApiManaged(row);
    const attached = tx.select({ n: count() }).from(cidMappings).where(eq(cidMappings.instructionId, row.id)).get()?.n ?? 0;
    if (attached > 0) {
      throw conflict(`payment instruction ${row.id} still has ${attached} CID${attached === 1 ? "" : "s"} attached; detach them first`);
    }
    tx.delete(paymentInstructions).where(eq(paymentInstructions.id, row.id)).run();
    catalogChanged();
  }, WRITE);
}

/**
 * Attaches a CID. Idempotent for the same instruction (answers the existing
 * association); 409 when the CID belongs to another instruction.
 */
export function attachCid(db: Db, id: string, cidText: string, now = new Date()): CidRecord {
  const cid = normalizeCid(cidText);
  return db.transaction((tx) => {
    const row = requireRow(tx as unknown as Db, id);
    assertApiManaged(row);
    const existing = tx.select().from(cidMappings).where(eq(cidMappings.cid, cid)).get();
    if (existing) {
      if (existing.instructionId === row.id) return existing;
      const where = existing.source === "api" ? "" : ` (declared in the pricing file ${existing.source.replace(/^file:/, "")})`;
      throw conflict(`CID ${cid} is already attached to payment instruction ${existing.instructionId}${where}; a CID has at most one instruction`);
    }
    const mapping = { cid, instructionId: row.id, source: "api", createdAt: now.toISOString() };
    tx.insert(cidMappings).values(mapping).run();
    catalogChanged();
    return mapping;
  }, WRITE);
}

export function detachCid(db: Db, id: string, cidText: string): void {
  const cid = normalizeCid(cidText);
  db.transaction((tx) => {
    const row = requireRow(tx as unknown as Db, id);
    assertApiManaged(row);
    const gone = tx
      .delete(cidMappings)
      .where(and(eq(cidMappings.cid, cid), eq(cidMappings.instructionId, row.id)))
      .returning({ cid: cidMappings.cid })
      .all();
    if (gone.length === 0) throw notFound(`CID ${cid} is not attached to payment instruction ${row.id}`);
    catalogChanged();
  }, WRITE);
}

/** CIDs of an instruction in CID order (a stable key for keyset paging). */
export function listCids(db: Db, id: string, opts: { limit: number; pageToken?: string }): { cids: string[]; nextPageToken?: string } {
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
