/**
 * Proofs that fail verification leave no permanent rows. Each claims a
 * ledger row before the facilitator hears of it (the replay guard), and a
 * refusal marks it `failed`; a flood of correctly signed proofs from
 * unfunded keys would otherwise grow the ledger without bound. Such rows are
 * readable for REFUSED_ROW_RETENTION_MS (an operator looking at what just
 * happened; the log line of each refusal stays), then deleted, every minute.
 * Settled rows, pending ones and refusals at settle are never touched.
 */
import type { PaymentStore } from "./store";

/** How long a row refused at verify is kept. */
export const REFUSED_ROW_RETENTION_MS = 10 * 60_000;
const EVERY_MS = 60_000;

export interface PruneOptions {
  payments: Pick<PaymentStore, "pruneRefusedAtVerify">;
  log?: { info(obj: object, msg: string): void; error(obj: object, msg: string): void };
  retentionMs?: number;
  everyMs?: number;
  now?: () => number;
}

/** Deletes every row refused at verify before `now - retentionMs`, in batches; returns how many. */
export async function pruneRefusedRows(opts: PruneOptions): Promise<number> {
  const before = new Date((opts.now ?? Date.now)() - (opts.retentionMs ?? REFUSED_ROW_RETENTION_MS)).toISOString();
  let total = 0;
  for (let n = -1; n !== 0; total += n) n = await opts.payments.pruneRefusedAtVerify(before);
  return total;
}

/** Prunes now and every minute until stopped. */
export function startPruning(opts: PruneOptions): { stop(): void } {
  const run = async () => {
    try {
      const removed = await pruneRefusedRows(opts);
      if (removed > 0) opts.log?.info({ removed }, "pruned payment rows refused at verify");
    } catch (e) {
      opts.log?.error({ err: (e as Error).name }, "pruning refused payment rows failed"); // busy: next minute
    }
  };
  void run();
  const timer = setInterval(run, opts.everyMs ?? EVERY_MS);
  timer.unref?.();
  return { stop: () => clearInterval(timer) };
}
