/**
 * Makes the database match the pricing files, in ONE synchronous SQLite
 * transaction: readers see the state before or after, never a mix, and a
 * rejected reload leaves every row as it was.
 *
 * Only instructions whose source is "file:..." are touched; each keeps its id
 * (matched by source) across reloads and restarts, and its version moves by
 * one only when its name, description or requirements change. A reload that
 * changes nothing writes nothing. This writes the instructions module's tables
 * directly because a reconcile is a bulk set-difference; the rules for what a
 * valid requirement is stay in instructions/requirements.ts.
 */
import { eq, inArray, like } from "drizzle-orm";
import type { Db } from "../db/client";
import { cidMappings, paymentInstructions } from "../db/schema";
import type { StoredRequirement } from "../instructions/requirements";
import type { DesiredInstruction, PricingProblem } from "./load";

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

export type SyncResult = { ok: true; changes: SyncChanges } | { ok: false; errors: PricingProblem[] };

/** JSON with sorted keys: two equal requirement lists compare equal whatever order their keys were written in. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, (v as Record<string, unknown>)[k]]))
      : v,
  );
}

/** SQLite allows a bounded number of bound values per statement. */
function* chunks<T>(items: T[], size = 400): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

export function emptyChanges(): SyncChanges {
  return { created: [], updated: [], deleted: [], cidsAttached: 0, cidsDetached: 0 };
}

export function changed(c: SyncChanges): boolean {
  return c.created.length + c.updated.length + c.deleted.length + c.cidsAttached + c.cidsDetached > 0;
}

/**
 * Applies `desired` (already validated, one owner per CID) to the database.
 * Refuses, writing nothing, when a CID is attached to an instruction made
 * through the API.
 */
export function reconcile(db: Db, desired: readonly DesiredInstruction[], now = new Date()): SyncResult {
  const stamp = now.toISOString();
  return db.transaction((tx) => {
    const existing = tx
      .select({
        id: paymentInstructions.id,
        version: paymentInstructions.version,
        name: paymentInstructions.name,
        description: paymentInstructions.description,
        requirements: paymentInstructions.requirements,
        source: paymentInstructions.source,
      })
      .from(paymentInstructions)
      .where(like(paymentInstructions.source, "file:%"))
      .all();
    const bySource = new Map(existing.map((row) => [row.source, row]));
    const fileIds = new Set(existing.map((row) => row.id));

    // Current CID -> instruction for file-made instructions.
    const mapped = new Map<string, string>();
    for (const row of tx
      .select({ cid: cidMappings.cid, instructionId: cidMappings.instructionId })
      .from(cidMappings)
      .innerJoin(paymentInstructions, eq(paymentInstructions.id, cidMappings.instructionId))
      .where(like(paymentInstructions.source, "file:%"))
      .all()) {
      mapped.set(row.cid, row.instructionId);
    }

    // A CID not mapped by a file instruction may belong to an API instruction: that refuses the reload.
    const errors: PricingProblem[] = [];
    const ownerOf = (cid: string) =>
      tx
        .select({ id: paymentInstructions.id, name: paymentInstructions.name })
        .from(cidMappings)
        .innerJoin(paymentInstructions, eq(paymentInstructions.id, cidMappings.instructionId))
        .where(eq(cidMappings.cid, cid))
        .get();
    for (const inst of desired) {
      for (const claim of inst.cids) {
        if (mapped.has(claim.cid)) continue;
        const other = ownerOf(claim.cid);
        if (other && !fileIds.has(other.id)) {
          errors.push({
            ...claim.at,
            rule: "duplicate-cid",
            message: `CID ${claim.cid}${claim.via ? ` (${claim.via})` : ""} of "${inst.key}" is already attached to payment instruction ${other.id} ("${other.name}", made through the API); detach it there or drop it here`,
          });
        }
      }
    }
    if (errors.length) return { ok: false, errors } as const;

    const changes = emptyChanges();
    const wanted = new Set(desired.map((d) => d.source));
    const ids = new Map<string, string>(); // source -> id, for the mappings below

    // 1. Instructions no file declares any more go, with their CID mappings.
    const gone = existing.filter((row) => !wanted.has(row.source));
    const goneIds = gone.map((row) => row.id);
    for (const part of chunks(goneIds)) {
      tx.delete(cidMappings).where(inArray(cidMappings.instructionId, part)).run();
      tx.delete(paymentInstructions).where(inArray(paymentInstructions.id, part)).run();
    }
    for (const row of gone) {
      changes.deleted.push({ id: row.id, source: row.source, name: row.name, version: row.version });
      fileIds.delete(row.id);
    }

    // 2. Created and updated instructions.
    const inserts: (typeof paymentInstructions.$inferInsert)[] = [];
    for (const inst of desired) {
      const row = bySource.get(inst.source);
      if (!row) {
        const id = Bun.randomUUIDv7();
        ids.set(inst.source, id);
        inserts.push({
          id,
          version: 1,
          name: inst.name,
          description: inst.description,
          requirements: inst.requirements,
          source: inst.source,
          createdAt: stamp,
          updatedAt: stamp,
        });
        changes.created.push({ id, source: inst.source, name: inst.name, version: 1 });
        continue;
      }
      ids.set(inst.source, row.id);
      const same =
        row.name === inst.name &&
        (row.description ?? null) === inst.description &&
        canonicalJson(row.requirements as StoredRequirement[]) === canonicalJson(inst.requirements);
      if (same) continue;
      tx.update(paymentInstructions)
        .set({
          name: inst.name,
          description: inst.description,
          requirements: inst.requirements,
          version: row.version + 1,
          updatedAt: stamp,
        })
        .where(eq(paymentInstructions.id, row.id))
        .run();
      changes.updated.push({ id: row.id, source: inst.source, name: inst.name, version: row.version + 1 });
    }
    for (const part of chunks(inserts, 100)) tx.insert(paymentInstructions).values(part).run();

    // 3. CID mappings: detach what moved or went, then attach what is new.
    const want = new Map<string, { id: string; source: string }>();
    for (const inst of desired) {
      const id = ids.get(inst.source)!;
      for (const claim of inst.cids) want.set(claim.cid, { id, source: inst.source });
    }
    const goneSet = new Set(goneIds);
    const detach: string[] = [];
    for (const [cid, id] of mapped) {
      if (goneSet.has(id)) {
        changes.cidsDetached++; // already removed with its instruction
        continue;
      }
      if (want.get(cid)?.id !== id) detach.push(cid);
    }
    for (const part of chunks(detach)) tx.delete(cidMappings).where(inArray(cidMappings.cid, part)).run();
    changes.cidsDetached += detach.length;

    const attach: (typeof cidMappings.$inferInsert)[] = [];
    for (const [cid, target] of want) {
      if (mapped.get(cid) === target.id) continue;
      attach.push({ cid, instructionId: target.id, source: target.source, createdAt: stamp });
    }
    for (const part of chunks(attach, 200)) tx.insert(cidMappings).values(part).run();
    changes.cidsAttached += attach.length;

    return { ok: true, changes } as const;
  });
}
