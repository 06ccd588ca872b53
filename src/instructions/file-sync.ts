/**
 * The pricing files' side of the instructions tables on SQLite: makes the
 * instructions whose source is "file:..." and their CID mappings match a
 * desired set, in ONE synchronous SQLite transaction: readers see the state
 * before or after, never a mix, and a refused sync leaves every row as it was.
 *
 * What to write is decided by file-sync-plan.ts (shared with PostgreSQL's
 * file-sync-pg.ts); this file reads the state and runs the plan. The pricing
 * module decides what is desired (pricing/load.ts) and words the refusals
 * (pricing/sync.ts); the rules for what a valid requirement is stay in
 * requirements.ts. Called through the instruction store (`syncFiles`),
 * which bumps the catalog signal.
 */
import type { Database } from "bun:sqlite";
import { type FileInstruction, type FileSyncResult, planFileSync, type StoredFileInstruction } from "./file-sync-plan";

export {
  changed,
  emptyChanges,
  type FileCidConflict,
  type FileInstruction,
  type FileSyncResult,
  type InstructionChange,
  type SyncChanges,
} from "./file-sync-plan";

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
    fileInstructions: sql.query<StoredFileInstruction, []>(
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
    const mapped = new Map<string, string>();
    for (const row of q.fileMappings.all()) mapped.set(row.cid, row.instructionId);
    const planned = planFileSync({ existing: q.fileInstructions.all(), mapped }, desired, (cid) => q.ownerOf.get(cid));
    if (!planned.ok) return planned;
    const { plan } = planned;
    for (const id of plan.remove) {
      q.detachAll.run(id);
      q.remove.run(id);
    }
    for (const i of plan.insert)
      q.insert.run(i.id, i.name, i.description, i.requirementsJson, i.source, stamp, stamp, i.access, i.access_scope);
    for (const i of plan.update)
      q.update.run(i.name, i.description, i.requirementsJson, i.version, stamp, i.id, i.access, i.access_scope);
    for (const cid of plan.detach) q.detach.run(cid);
    for (const m of plan.attach) q.attach.run(m.cid, m.instructionId, m.source, stamp);
    return { ok: true, changes: plan.changes };
  })();
}
