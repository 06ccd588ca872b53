/**
 * What a manual grant must point at, checked the same way for the API and
 * the CLI: the instruction exists, and a CID given is one of its CIDs.
 * Failures are ApiError (404, 409, 400), which the CLI prints as one line.
 */
import { canonicalCid } from "../content/cid";
import { conflict, invalidInput } from "../http/errors";
import type { InstructionStore } from "../instructions/store";

/** The canonical CID, or a 400 naming `path`. */
export function cidOf(text: string, path: string): string {
  const cid = canonicalCid(text);
  if (!cid) throw invalidInput([{ path, message: "is not a valid CID (v0 or v1)" }]);
  return cid;
}

/**
 * A manual grant's checks, shared with the CLI: the instruction exists (404),
 * a CID given is one of its CIDs (409: a grant under an instruction that
 * does not sell that CID is a typo the creator should hear about, not a
 * row to keep). Answers the stored instruction id and the canonical CID.
 */
export async function checkGrantTarget(
  instructions: Pick<InstructionStore, "get" | "forCid">,
  instructionId: string,
  cidText: string | undefined,
): Promise<{ instructionId: string; cid?: string }> {
  const instruction = await instructions.get(instructionId);
  if (cidText === undefined) return { instructionId: instruction.id };
  const cid = cidOf(cidText, "cid");
  if ((await instructions.forCid(cid))?.id !== instruction.id)
    throw conflict(`CID ${cid} is not attached to payment instruction ${instruction.id}`);
  return { instructionId: instruction.id, cid };
}
