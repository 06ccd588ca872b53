/**
 * What the gateway sells: CID -> (instruction, file, ready-made 402).
 *
 * The 402 path is the hot path, so the answer for a CID is built once and
 * kept until what it was built from changes. Writes in this process go
 * through the app's stores, which bump its catalog signal (db/changes.ts):
 * one integer compare per request, and ledger writes do not evict anything.
 * Commits by other processes (a CLI; another replica on PostgreSQL) move
 * the signal's `elsewhere()` number, asked at most every
 * ELSEWHERE_CHECK_MS: an idle server sees them on its next request, a busy
 * one within that bound.
 *
 * On PostgreSQL a miss is a query over the network: `lookup` then answers
 * with a promise, once per CID and generation; every hit stays synchronous.
 */
import { canonicalCid } from "../content/cid";
import type { ContentFile, ContentStore } from "../content/store";
import type { CatalogChanges } from "../db/changes";
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
/** Longest a commit by another process may go unseen while requests keep coming (besides its own polling). */
export const ELSEWHERE_CHECK_MS = 100;

export function createCatalog(sources: CatalogSources, settings: Pick<Settings, "publicUrl" | "maxTimeoutSeconds">) {
  const { instructions, content, changes } = sources;
  let generation = -1;
  let elsewhere = -1;
  let nextElsewhereCheck = 0;
  /** Moves at every clear: a miss's answer is kept only if no clear came while its query ran. */
  let epoch = 0;
  const entries = new Map<string, PricedContent | null>();
  /** Misses being answered by the database (PostgreSQL), by spelling. */
  const asking = new Map<string, Promise<PricedContent | undefined>>();

  /** False when a cached answer may be out of date. */
  function stillCurrent(): boolean {
    let current = generation === changes.generation;
    const now = performance.now();
    if (now >= nextElsewhereCheck) {
      nextElsewhereCheck = now + ELSEWHERE_CHECK_MS;
      const e = changes.elsewhere();
      if (e !== elsewhere) {
        elsewhere = e;
        current = false;
      }
    }
    return current;
  }

  function build(cid: string): PricedContent | null | Promise<PricedContent | null> {
    const found = instructions.forCid(cid);
    return found instanceof Promise ? found.then((i) => withFile(cid, i)) : withFile(cid, found);
  }

  function withFile(cid: string, instruction: Instruction | undefined): PricedContent | null {
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
  function lookup(spelling: string): PricedContent | undefined | Promise<PricedContent | undefined> {
    if (!stillCurrent() || entries.size >= MAX_ENTRIES) {
      entries.clear();
      asking.clear();
      generation = changes.generation;
      epoch++;
    }
    const entry = entries.get(spelling);
    if (entry !== undefined) return entry ?? undefined;
    // A query already on its way for this spelling is shared: after a change, every request for a
    // popular CID would otherwise send its own, queueing on the connection pool.
    const pending = asking.get(spelling);
    if (pending) return pending;
    const cid = canonicalCid(spelling);
    const built = cid ? build(cid) : null;
    if (!(built instanceof Promise)) {
      entries.set(spelling, built);
      return built ?? undefined;
    }
    const builtAt = epoch;
    const answer = built.then(
      (e) => {
        // Kept only if nothing moved while the query ran: an answer from before a change must not stick.
        if (builtAt === epoch) {
          asking.delete(spelling);
          if (entries.size < MAX_ENTRIES) entries.set(spelling, e);
        }
        return e ?? undefined;
      },
      (error) => {
        if (builtAt === epoch) asking.delete(spelling); // the next request asks again
        throw error;
      },
    );
    asking.set(spelling, answer);
    return answer;
  }

  /** The cached answer for a spelling, never a query: what the proof counters ask after a decision. */
  const peek = (spelling: string): PricedContent | undefined => entries.get(spelling) ?? undefined;

  return { lookup, peek };
}

export type Catalog = ReturnType<typeof createCatalog>;
