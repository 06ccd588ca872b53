/**
 * Applies validated pricing files to the database through the instruction
 * store, which owns the tables and does the bulk set-difference in one
 * transaction (instructions/file-sync-plan.ts). What is left here is pricing's
 * part: a CID the files claim that an API-made instruction already holds
 * refuses the reload, reported where the claim is written.
 */
import type { SyncChanges } from "../instructions/file-sync-plan";
import type { InstructionStore } from "../instructions/store";
import { type DesiredInstruction, type PricingProblem, pin } from "./load";

export { changed, emptyChanges, type InstructionChange, type SyncChanges } from "../instructions/file-sync-plan";

export type SyncResult = { ok: true; changes: SyncChanges } | { ok: false; errors: PricingProblem[] };

/**
 * Applies `desired` (already validated, one owner per CID) to the database.
 * Refuses, writing nothing, when a CID is attached to an instruction made
 * through the API.
 */
export async function reconcile(
  instructions: Pick<InstructionStore, "syncFiles">,
  desired: readonly DesiredInstruction[],
  now = new Date(),
): Promise<SyncResult> {
  const result = await instructions.syncFiles(desired, now);
  if (result.ok) return result;
  return {
    ok: false,
    errors: result.conflicts.map(({ instruction: inst, claim, owner }) => ({
      ...pin(claim.at),
      rule: "duplicate-cid",
      message: `CID ${claim.cid}${claim.via ? ` (${claim.via})` : ""} of "${inst.key}" is already attached to payment instruction ${owner.id} ("${owner.name}", made through the API); detach it there or drop it here`,
    })),
  };
}
