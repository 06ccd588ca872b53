/**
 * The pricing files' reconcile as a set difference, without a database: from
 * the file-made instructions and CID mappings as stored and the desired set,
 * what to delete, insert, update, detach and attach, or the conflicts that
 * refuse the whole sync. Each engine reads the state and applies the plan in
 * one transaction of its own (file-sync.ts on SQLite, file-sync-pg.ts on
 * PostgreSQL), so both decide alike.
 *
 * Only instructions whose source is "file:..." are touched; each keeps its id
 * (matched by source) across reloads and restarts, and its version moves by
 * one only when its name, description, requirements or access policy change.
 * A sync that changes nothing plans nothing, so it writes nothing.
 */
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

/** A file-made instruction as stored, its requirements as the stored JSON text. */
export interface StoredFileInstruction {
  id: string;
  version: number;
  name: string;
  description: string | null;
  requirements: string;
  source: string;
  access: string;
  access_scope: string;
}

/** What the plan is made from: the file-made instructions, and their CIDs (CID -> instruction id). */
export interface FileSyncState {
  existing: readonly StoredFileInstruction[];
  mapped: ReadonlyMap<string, string>;
}

/** The columns a plan writes to payment_instructions (created_at/updated_at: the sync's time). */
export interface PlannedInstruction {
  id: string;
  version: number;
  name: string;
  description: string | null;
  requirementsJson: string;
  source: string;
  access: string;
  access_scope: AccessScope;
}

export interface FileSyncPlan {
  /** Instructions no file declares any more: their CID mappings go first, then they do. */
  remove: string[];
  insert: PlannedInstruction[];
  update: PlannedInstruction[];
  /** CIDs that moved or went, of instructions that stay. */
  detach: string[];
  attach: { cid: string; instructionId: string; source: string }[];
  changes: SyncChanges;
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

/**
 * The desired CIDs no file-made instruction holds: the only ones whose owner
 * must be looked up (one may be an API instruction's, which refuses the sync).
 * A reload that only re-reads the same files asks for none.
 */
export function unmappedCids(desired: readonly FileInstruction[], mapped: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const inst of desired) for (const claim of inst.cids) if (!mapped.has(claim.cid)) out.push(claim.cid);
  return out;
}

/**
 * The writes that make the stored state `desired`, or the conflicts that
 * refuse it. `ownerOf` answers for the CIDs of `unmappedCids` (the
 * instruction holding it, if any).
 */
export function planFileSync<I extends FileInstruction>(
  state: FileSyncState,
  desired: readonly I[],
  ownerOf: (cid: string) => { id: string; name: string } | undefined | null,
): { ok: true; plan: FileSyncPlan } | { ok: false; conflicts: FileCidConflict<I>[] } {
  const { existing, mapped } = state;
  const bySource = new Map(existing.map((row) => [row.source, row]));
  const fileIds = new Set(existing.map((row) => row.id));

  // A CID not mapped by a file instruction may belong to an API instruction: that refuses the sync.
  const conflicts: FileCidConflict<I>[] = [];
  for (const inst of desired) {
    for (const claim of inst.cids) {
      if (mapped.has(claim.cid)) continue;
      const other = ownerOf(claim.cid);
      if (other && !fileIds.has(other.id)) conflicts.push({ instruction: inst, claim, owner: other });
    }
  }
  if (conflicts.length) return { ok: false, conflicts };

  const plan: FileSyncPlan = { remove: [], insert: [], update: [], detach: [], attach: [], changes: emptyChanges() };
  const { changes } = plan;
  const wanted = new Set(desired.map((d) => d.source));
  const ids = new Map<string, string>(); // source -> id, for the mappings below

  // 1. Instructions no file declares any more go, with their CID mappings.
  const goneIds = new Set<string>();
  for (const row of existing) {
    if (wanted.has(row.source)) continue;
    goneIds.add(row.id);
    plan.remove.push(row.id);
    changes.deleted.push({ id: row.id, source: row.source, name: row.name, version: row.version });
  }

  // 2. Created and updated instructions.
  for (const inst of desired) {
    const json = inst.requirementsJson;
    const row = bySource.get(inst.source);
    const columns = {
      name: inst.name,
      description: inst.description,
      requirementsJson: json,
      source: inst.source,
      access: inst.access,
      access_scope: inst.access_scope,
    };
    if (!row) {
      const id = Bun.randomUUIDv7();
      ids.set(inst.source, id);
      plan.insert.push({ id, version: 1, ...columns });
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
    plan.update.push({ id: row.id, version: row.version + 1, ...columns });
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
      changes.cidsDetached++; // removed with its instruction
    } else if (want.get(cid)?.id !== id) {
      plan.detach.push(cid);
      changes.cidsDetached++;
    }
  }
  for (const [cid, target] of want) {
    if (mapped.get(cid) === target.id) continue;
    plan.attach.push({ cid, instructionId: target.id, source: target.source });
    changes.cidsAttached++;
  }
  return { ok: true, plan };
}
