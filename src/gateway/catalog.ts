/**
 * What the gateway sells: CID -> (instruction, file, ready-made 402).
 *
 * The 402 path is the hot path, so the answer for a CID is built once and
 * kept until the database changes. "Changed" is asked of SQLite itself on
 * every request, cheaply: total_changes() moves with every write on our
 * connection (API, pricing sync, content index, ledger) and data_version
 * with every commit from another connection (a CLI). No TTL, no staleness.
 */
import { parseCid } from "../content/cid";
import { lookupContent } from "../content/store";
import type { Db } from "../db/client";
import { getInstructionForCid } from "../instructions/service";
import type { Settings } from "../settings";
import { buildPaymentRequired, type Instruction, type PaymentRequired } from "./requirements";

export interface PricedContent {
  /** Canonical spelling (v1 base32, v0 Qm...). */
  cid: string;
  instruction: Instruction;
  file: NonNullable<ReturnType<typeof lookupContent>>;
  required: PaymentRequired;
}

const MAX_ENTRIES = 10_000;

export function createCatalog(db: Db, settings: Pick<Settings, "publicUrl" | "contentDir" | "maxTimeoutSeconds">) {
  const generationQuery = db.sqlite.query<{ t: number; d: number }, []>(
    "SELECT total_changes() AS t, data_version AS d FROM pragma_data_version()",
  );
  let generation = "";
  const entries = new Map<string, PricedContent | null>();

  function currentGeneration(): string {
    const g = generationQuery.get();
    return g ? `${g.t}:${g.d}` : "";
  }

  function build(cid: string): PricedContent | null {
    const instruction = getInstructionForCid(db, cid);
    if (!instruction) return null;
    const file = lookupContent(db, settings, cid);
    if (!file) return null;
    const required = buildPaymentRequired({
      resourceUrl: `${settings.publicUrl}/x402/cid/${cid}`,
      instruction,
      mimeType: file.mediaType,
      maxTimeoutSeconds: settings.maxTimeoutSeconds,
    });
    return { cid, instruction, file, required };
  }

  /**
   * The priced file for a CID as the client spelled it (any multibase; v0 or
   * v1), or undefined: not a CID, no instruction, or no file. Keyed by the
   * spelling, so a repeat request skips parsing too.
   */
  function lookup(spelling: string): PricedContent | undefined {
    const now = currentGeneration();
    if (now !== generation || entries.size >= MAX_ENTRIES) {
      entries.clear();
      generation = now;
    }
    let entry = entries.get(spelling);
    if (entry === undefined) {
      const cid = parseCid(spelling)?.toString();
      entry = cid ? build(cid) : null;
      entries.set(spelling, entry);
    }
    return entry ?? undefined;
  }

  return { lookup };
}

export type Catalog = ReturnType<typeof createCatalog>;
