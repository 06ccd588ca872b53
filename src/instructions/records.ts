/**
 * What both instruction stores (store.ts on SQLite, store-pg.ts on
 * PostgreSQL) decide the same way, without a database: the record shape,
 * the checks and their ApiErrors, what a patch changes, and the page tokens'
 * page shape. Each store keeps only its queries and its transactions, so the
 * two cannot drift apart in what they answer or refuse.
 */
import { type AnyColumn, and, eq, gt, lt, type SQL } from "drizzle-orm";
import { parseCid } from "../content/cid";
import {
  ACCESS_RULE,
  type AccessScope,
  DEFAULT_ACCESS,
  DEFAULT_ACCESS_SCOPE,
  isAccessScope,
  parseAccessPolicy,
} from "../entitlements/policy";
import { badRequest, conflict, invalidInput, notFound } from "../http/errors";
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

/** A payment_instructions row as drizzle reads it from either engine (schema.ts, schema-pg.ts). */
export interface InstructionRow {
  id: string;
  version: number;
  name: string;
  description: string | null;
  requirements: unknown;
  source: string;
  access: string;
  accessScope: AccessScope;
  createdAt: string;
  updatedAt: string;
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The id as stored (lower case), or undefined when it cannot be one: such an id finds nothing, with no query. */
export function instructionKey(id: string): string | undefined {
  return UUID.test(id) ? id.toLowerCase() : undefined;
}

export function instructionNotFound(id: string) {
  return notFound(`no payment instruction ${id}`);
}

export function toRecord(row: InstructionRow): InstructionRecord {
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

/** Only API-made instructions are written through the API: a file's are a 409 naming the file. */
export function assertApiManaged(row: { id: string; source: string }) {
  if (row.source !== "api") throw conflict(`payment instruction ${row.id} ${describeFileSource(row.source)}`);
}

/** The row `create` inserts: a new UUIDv7 (sorts by creation time, so it is the paging key too), version 1. */
export function newInstructionRow(input: CreateInstructionInput, now: Date): InstructionRow {
  checkAccess(input);
  const at = now.toISOString();
  return {
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
}

/** A patch checked before any query: at least one field, valid access fields. */
export function checkPatch(patch: UpdateInstructionInput): void {
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
}

/**
 * The columns `patch` sets on `row` with the version moved by one, or
 * undefined when it changes nothing (the version moves only on a change).
 */
export function applyPatch(row: InstructionRow, patch: UpdateInstructionInput, now: Date) {
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
  if (!changed) return undefined;
  return { ...next, version: row.version + 1, updatedAt: now.toISOString() };
}

/** The 409 of deleting an instruction that still sells CIDs. */
export function stillAttached(id: string, attached: number) {
  return conflict(
    `payment instruction ${id} still has ${attached} CID${attached === 1 ? "" : "s"} attached; detach them first`,
  );
}

/** The 409 of attaching a CID another instruction holds. */
export function cidTaken(cid: string, existing: { instructionId: string; source: string }) {
  const where =
    existing.source === "api" ? "" : ` (declared in the pricing file ${existing.source.replace(/^file:/, "")})`;
  return conflict(
    `CID ${cid} is already attached to payment instruction ${existing.instructionId}${where}; a CID has at most one instruction`,
  );
}

export function cidNotAttached(cid: string, id: string) {
  return notFound(`CID ${cid} is not attached to payment instruction ${id}`);
}

/**
 * A list's WHERE over either engine's tables (drizzle's operators take either dialect's columns):
 * the filters checked first, in the order they are reported (400s name the parameter). `heldBy`
 * makes "the instruction holding this CID" as the store's own subquery.
 */
export function listWhere(
  opts: ListInstructionsOptions,
  t: { id: AnyColumn; name: AnyColumn },
  heldBy: (cid: string) => SQL,
): SQL | undefined {
  const where: SQL[] = [];
  // Newest first: the page after a token is the ids below its last one.
  if (opts.pageToken !== undefined) where.push(lt(t.id, decodePageToken("i", opts.pageToken)));
  if (opts.name !== undefined) where.push(eq(t.name, opts.name));
  if (opts.id !== undefined) {
    const id = instructionKey(opts.id);
    if (!id) throw badRequest("id is not a valid id", [{ path: "id", message: "must be a UUID" }]);
    where.push(eq(t.id, id));
  }
  if (opts.cid !== undefined) where.push(heldBy(normalizeCid(opts.cid)));
  return and(...where);
}

/** `rows` fetched with limit + 1: the page, and a token when a row is left over. */
export function instructionPage(
  rows: readonly InstructionRow[],
  limit: number,
): { items: InstructionRecord[]; nextPageToken?: string } {
  const items = rows.slice(0, limit).map(toRecord);
  return rows.length > limit ? { items, nextPageToken: encodePageToken("i", items[items.length - 1].id) } : { items };
}

/** An instruction's CIDs, after the page token's (CID order: the keyset), over either engine's table. */
export function cidsWhere(
  instructionId: string,
  pageToken: string | undefined,
  m: { instructionId: AnyColumn; cid: AnyColumn },
): SQL | undefined {
  const where = [eq(m.instructionId, instructionId)];
  if (pageToken !== undefined) where.push(gt(m.cid, decodePageToken("c", pageToken)));
  return and(...where);
}

/** CIDs fetched with limit + 1, in CID order: the page, and a token when one is left over. */
export function cidPage(rows: readonly { cid: string }[], limit: number): { cids: string[]; nextPageToken?: string } {
  const cids = rows.slice(0, limit).map((r) => r.cid);
  return rows.length > limit ? { cids, nextPageToken: encodePageToken("c", cids[cids.length - 1]) } : { cids };
}
