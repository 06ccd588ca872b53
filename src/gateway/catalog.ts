/**
 * What the gateway sells: CID -> (instruction, file, ready-made 402).
 *
 * The 402 path is the hot path, so the answer for a CID is built once and
 * kept until what it was built from changes. Writes in this process go
 * through the app's stores, which bump its catalog signal (db/changes.ts):
 * one integer compare per request, and ledger writes do not evict anything.
 * Commits by other processes (a CLI) move SQLite's data_version, asked at
 * most every DATA_VERSION_CHECK_MS: an idle server sees them on its next
 * request, a busy one within that bound.
 */
import { canonicalCid } from "../content/cid";
import type { ContentFile, ContentStore } from "../content/store";
import type { CatalogChanges } from "../db/changes";
import type { Db } from "../db/client";
import type { InstructionStore } from "../instructions/store";
import type { Settings } from "../settings";
import { buildPaymentRequired, type Instruction, type PaymentRequired } from "./requirements";

export interface PricedContent {
  /** Canonical spelling (v1 base32, v0 Qm...). */
  cid: string;
  instruction: Instruction;
  file: ContentFile;
  required: PaymentRequired;
}

/** What the catalog reads: the app's stores and the signal their writes bump (see src/stores.ts). */
export interface CatalogSources {
  instructions: Pick<InstructionStore, "forCid">;
  content: Pick<ContentStore, "lookup">;
  changes: CatalogChanges;
}

const MAX_ENTRIES = 10_000;
/** Longest a commit by another process may go unseen while requests keep coming. */
export const DATA_VERSION_CHECK_MS = 100;

export function createCatalog(
  db: Db,
  sources: CatalogSources,
  settings: Pick<Settings, "publicUrl" | "maxTimeoutSeconds">,
) {
  const { instructions, content, changes } = sources;
  const dataVersionQuery = db.sqlite.query<{ d: number }, []>("SELECT data_version AS d FROM pragma_data_version()");
  let generation = -1;
  let dataVersion = -1;
  let nextDataVersionCheck = 0;
  const entries = new Map<string, PricedContent | null>();

  /** False when a cached answer may be out of date. */
  function stillCurrent(): boolean {
    let current = generation === changes.generation;
    const now = performance.now();
    if (now >= nextDataVersionCheck) {
      nextDataVersionCheck = now + DATA_VERSION_CHECK_MS;
      const d = dataVersionQuery.get()?.d ?? -1;
      if (d !== dataVersion) {
        dataVersion = d;
        current = false;
      }
    }
    return current;
  }

  function build(cid: string): PricedContent | null {
    const instruction = instructions.forCid(cid);
    if (!instruction) return null;
    const file = content.lookup(cid);
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
    if (!stillCurrent() || entries.size >= MAX_ENTRIES) {
      entries.clear();
      generation = changes.generation;
    }
    let entry = entries.get(spelling);
    if (entry === undefined) {
      const cid = canonicalCid(spelling);
      entry = cid ? build(cid) : null;
      entries.set(spelling, entry);
    }
    return entry ?? undefined;
  }

  return { lookup };
}

export type Catalog = ReturnType<typeof createCatalog>;
