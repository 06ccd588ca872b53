/**
 * The pricing files' side of the instructions tables: makes the instructions
 * whose source is "file:..." and their CID mappings match a desired set, in
 * ONE synchronous SQLite transaction: readers see the state before or after,
 * never a mix, and a refused sync leaves every row as it was.
 *
 * Only instructions whose source is "file:..." are touched; each keeps its id
 * (matched by source) across reloads and restarts, and its version moves by
 * one only when its name, description, requirements or access policy change. A sync that
 * changes nothing writes nothing. The pricing module decides what is desired
 * (pricing/load.ts) and words the refusals (pricing/sync.ts); the rules for
 * what a valid requirement is stay in requirements.ts. Called through the
 * instruction store (`syncFiles`), which bumps the catalog signal.
 */
import type { Database } from "bun:sqlite";
import type { AccessScope } from "../entitlements/policy";
import type { StoredRequirement } from "./requirements";

/** One instruction a pricing file declares, already validated (one owner per CID across the set). */
export interface FileInstruction {
  /** "file:<path relative to the config folder>#<key>": the identity kept across syncs. */
  source: string;
  name: string;
  description: string | null;
  requirements: StoredRequirement[];
  /** JSON.stringify(requirements): compared with the stored text before anything is parsed. */
  requirementsJson: string;
  /** Already checked with parseAccessPolicy. */
  access: string;
  access_scope: AccessScope;
  /** Each claim may carry more (where it was written); only `cid` is read here. */
  cids: readonly { cid: string }[];
}

export interface InstructionChange {
  id: string;
  source: string;
  name: string;
  version: number;
}

export interface SyncChanges {
  created: InstructionChange[];
  updated: InstructionChange[];
  deleted: InstructionChange[];
  cidsAttached: number;
  cidsDetached: number;
}

/** A desired CID already attached to an instruction made through the API: the sync is refused. */
export interface FileCidConflict<I extends FileInstruction> {
  instruction: I;
  claim: I["cids"][number];
  owner: { id: string; name: string };
}

export type FileSyncResult<I extends FileInstruction> =
  | { ok: true; changes: SyncChanges }
  | { ok: false; conflicts: FileCidConflict<I>[] };

export function emptyChanges(): SyncChanges {
  return { created: [], updated: [], deleted: [], cidsAttached: 0, cidsDetached: 0 };
}

export function changed(c: SyncChanges): boolean {
  return c.created.length + c.updated.length + c.deleted.length + c.cidsAttached + c.cidsDetached > 0;
}

/** JSON with sorted keys: two equal requirement lists compare equal whatever order their keys were written in. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  );
}

interface InstructionRow {
  id: string;
  version: number;
  name: string;
  description: string | null;
  requirements: string;
  source: string;
  access: string;
  access_scope: string;
}

/**
 * Plain prepared statements rather than drizzle's builder: a cold reconcile
 * writes tens of thousands of rows and building each statement costs more
 * than running it. Column names follow db/schema.ts. Made once per store.
 */
export function fileSyncStatements(sql: Database) {
  return {
    anyFileInstruction: sql.query<{ 1: number }, []>(
      "SELECT 1 FROM payment_instructions WHERE source LIKE 'file:%' LIMIT 1",
    ),
    fileInstructions: sql.query<InstructionRow, []>(
      "SELECT id, version, name, description, requirements, source, access, access_scope FROM payment_instructions WHERE source LIKE 'file:%'",
    ),
    fileMappings: sql.query<{ cid: string; instructionId: string }, []>(
      `SELECT m.cid AS cid, m.instruction_id AS instructionId FROM cid_mappings m
       JOIN payment_instructions p ON p.id = m.instruction_id WHERE p.source LIKE 'file:%'`,
    ),
    ownerOf: sql.query<{ id: string; name: string }, [string]>(
      "SELECT p.id AS id, p.name AS name FROM cid_mappings m JOIN payment_instructions p ON p.id = m.instruction_id WHERE m.cid = ?",
    ),
    insert: sql.query<never, [string, string, string | null, string, string, string, string, string, string]>(
      `INSERT INTO payment_instructions (id, version, name, description, requirements, source, created_at, updated_at, access, access_scope)
       VALUES (?1, 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`,
    ),
    update: sql.query<never, [string, string | null, string, number, string, string, string, string]>(
      `UPDATE payment_instructions SET name = ?1, description = ?2, requirements = ?3, version = ?4, updated_at = ?5,
       access = ?7, access_scope = ?8 WHERE id = ?6`,
    ),
    remove: sql.query<never, [string]>("DELETE FROM payment_instructions WHERE id = ?"),
    detachAll: sql.query<never, [string]>("DELETE FROM cid_mappings WHERE instruction_id = ?"),
    detach: sql.query<never, [string]>("DELETE FROM cid_mappings WHERE cid = ?"),
    attach: sql.query<never, [string, string, string, string]>(
      "INSERT INTO cid_mappings (cid, instruction_id, source, created_at) VALUES (?, ?, ?, ?)",
    ),
  };
}

export type FileSyncStatements = ReturnType<typeof fileSyncStatements>;

/**
 * Applies `desired` to the database. Refuses, writing nothing, when a CID is
 * attached to an instruction made through the API.
 */
export function syncFileInstructions<I extends FileInstruction>(
  sqlite: Database,
  q: FileSyncStatements,
  desired: readonly I[],
  now: Date,
): FileSyncResult<I> {
  const stamp = now.toISOString();
  return sqlite.transaction((): FileSyncResult<I> => {
    const existing = q.fileInstructions.all();
    const bySource = new Map(existing.map((row) => [row.source, row]));
    const fileIds = new Set(existing.map((row) => row.id));

    // Current CID -> instruction for file-made instructions.
    const mapped = new Map<string, string>();
    for (const row of q.fileMappings.all()) mapped.set(row.cid, row.instructionId);

    // A CID not mapped by a file instruction may belong to an API instruction: that refuses the sync.
    const conflicts: FileCidConflict<I>[] = [];
    for (const inst of desired) {
      for (const claim of inst.cids) {
        if (mapped.has(claim.cid)) continue;
        const other = q.ownerOf.get(claim.cid);
        if (other && !fileIds.has(other.id)) conflicts.push({ instruction: inst, claim, owner: other });
      }
    }
    if (conflicts.length) return { ok: false, conflicts };

    const changes = emptyChanges();
    const wanted = new Set(desired.map((d) => d.source));
    const ids = new Map<string, string>(); // source -> id, for the mappings below

    // 1. Instructions no file declares any more go, with their CID mappings.
    const gone = existing.filter((row) => !wanted.has(row.source));
    const goneIds = new Set(gone.map((row) => row.id));
    for (const row of gone) {
      q.detachAll.run(row.id);
      q.remove.run(row.id);
      changes.deleted.push({ id: row.id, source: row.source, name: row.name, version: row.version });
    }

    // 2. Created and updated instructions.
    for (const inst of desired) {
      const json = inst.requirementsJson;
      const row = bySource.get(inst.source);
      if (!row) {
        const id = Bun.randomUUIDv7();
        ids.set(inst.source, id);
        q.insert.run(id, inst.name, inst.description, json, inst.source, stamp, stamp, inst.access, inst.access_scope);
        changes.created.push({ id, source: inst.source, name: inst.name, version: 1 });
        continue;
      }
      ids.set(inst.source, row.id);
      const same =
        row.name === inst.name &&
        (row.description ?? null) === inst.description &&
        row.access === inst.access &&
        row.access_scope === inst.access_scope &&
        // Same text is the common case; key order written by someone else still counts as the same.
        (row.requirements === json || canonicalJson(JSON.parse(row.requirements)) === canonicalJson(inst.requirements));
      if (same) continue;
      q.update.run(inst.name, inst.description, json, row.version + 1, stamp, row.id, inst.access, inst.access_scope);
      changes.updated.push({ id: row.id, source: inst.source, name: inst.name, version: row.version + 1 });
    }

    // 3. CID mappings: detach what moved or went, then attach what is new.
    const want = new Map<string, { id: string; source: string }>();
    for (const inst of desired) {
      const id = ids.get(inst.source)!;
      for (const claim of inst.cids) want.set(claim.cid, { id, source: inst.source });
    }
    for (const [cid, id] of mapped) {
      if (goneIds.has(id)) {
        changes.cidsDetached++; // removed with its instruction above
      } else if (want.get(cid)?.id !== id) {
        q.detach.run(cid);
        changes.cidsDetached++;
      }
    }
    for (const [cid, target] of want) {
      if (mapped.get(cid) === target.id) continue;
      q.attach.run(cid, target.id, target.source, stamp);
      changes.cidsAttached++;
    }
    return { ok: true, changes };
  })();
}
