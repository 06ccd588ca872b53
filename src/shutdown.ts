/**
 * A bounded drain for `stop()` (server.ts), which SIGTERM and SIGINT call
 * (index.ts, `cidgate serve`). The listener closes at once; requests in
 * flight, a settlement among them, get up to the grace to finish. A
 * settlement finishes within it by construction: verify and settle are each
 * bounded by FACILITATOR_TIMEOUT_MS and the default grace is both plus a
 * second. What is still running after the grace (a slow download; a
 * settlement only with a shorter grace) is cut off: its ledger row stays
 * `pending`, claimed, and is resolved on chain the next time the proof comes
 * (ledger/recovery.ts), so nobody pays twice and no payment is lost.
 */
import type { Server } from "bun";
import type { Logger } from "./http/logging";
import type { LedgerSettler } from "./ledger/settler";

/** Resolves true once every request finished, false when the grace ran out first. */
export async function drainRequests(
  server: Server<unknown>,
  opts: { force: boolean; graceMs: number; settler: Pick<LedgerSettler, "inflightCount">; log: Logger },
): Promise<boolean> {
  if (opts.force) {
    await server.stop(true);
    return true;
  }
  const settling = opts.settler.inflightCount();
  if (settling > 0 || server.pendingRequests > 0) {
    opts.log.info(
      { settling, requests: server.pendingRequests, graceMs: opts.graceMs },
      "stopping: finishing requests in flight",
    );
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const finished = await Promise.race([
    server.stop(false).then(() => true),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), opts.graceMs);
    }),
  ]);
  clearTimeout(timer);
  if (!finished) {
    opts.log.warn(
      { settling: opts.settler.inflightCount(), requests: server.pendingRequests },
      "stopping: grace over, closing connections; an unfinished settlement stays pending and is resolved on chain later",
    );
  }
  return finished;
}
