/**
 * Background reconciliation (issue 10, item 3): at start and every
 * RECONCILE_SECONDS, every pending row (unconfirmed, left by a process that
 * was killed, or being settled right now: the chain's answer is final
 * whoever records it) is resolved from the chain, so landed money is missing
 * from the totals for at most one interval and no buyer has to come back:
 *
 * - the authorization paid pay-to -> settled, with the entitlement its
 *   instruction grants (outcome.ts `paid`: one transaction);
 * - it was used otherwise, or expired unused on chain -> failed (released);
 * - still usable, or used by a transaction not found -> left for the next round.
 *
 * Rows released after a remote facilitator refused their settle (the nonce
 * was unused then) are looked at too while their authorization could still
 * land: a transaction in flight that pays after all is settled.
 *
 * Without an RPC for a row's network nothing can be known: the row waits for
 * its buyer or an operator (`cidgate payments resolve`, resolve.ts).
 */
import type { MaybePromise } from "../db/awaitable";
import { parseAccessPolicy } from "../entitlements/policy";
import { claimOf, type PaymentAttempt, paid, type SettlerDeps, safeReason, withDeadline } from "./outcome";
import type { Payment } from "./store";

/** What the chain made of one row. `open`: nothing decided yet (`detail` says why). */
export type ChainResolution =
  | { state: "settled"; payment: Payment }
  | { state: "failed"; detail: string }
  /** `blind`: no RPC for the row's network, so the chain was not read at all. */
  | { state: "open"; detail: string; blind?: boolean };

/** What resolving from the chain needs of the settler's deps: no facilitator. */
export interface ReconcileDeps
  extends Pick<SettlerDeps, "payments" | "entitlements" | "transaction" | "log" | "timeoutMs" | "lookup" | "events"> {
  /** The instruction a row was paid under, for the entitlement it grants (undefined: gone). */
  instructionAccess: (instructionId: string) => MaybePromise<PaymentAttempt["access"] | undefined>;
  /** Pending rows updated before this time are reconciled. */
  pendingBefore: () => string;
}

/** The access an instruction grants, for `instructionAccess` (none when it was deleted). */
export function accessOf(
  instruction: { access: string; access_scope: "cid" | "instruction" } | undefined,
): PaymentAttempt["access"] {
  const policy = instruction && parseAccessPolicy(instruction.access);
  return policy && instruction ? { policy, scope: instruction.access_scope } : undefined;
}

/** Reads the row's authorization from the chain and writes what it shows. */
export async function resolveFromChain(deps: ReconcileDeps, row: Payment): Promise<ChainResolution> {
  if (!deps.lookup) return { state: "open", detail: "no RPC is configured: the chain cannot be read", blind: true };
  const f = await withDeadline(deps.lookup(row), deps.timeoutMs, "chain lookup");
  if (!f) return { state: "open", detail: `no RPC is configured for ${row.network}`, blind: true };
  if (row.state === "failed" && f.state !== "paid") return { state: "open", detail: "released; no payment on chain" };
  if (f.state === "paid") {
    if (row.state === "failed")
      deps.log?.warn(
        { cid: row.cid, payer: row.payer, row: row.id, tx: f.txHash },
        "a payment released after its settle was refused landed on chain after all: settled",
      );
    const attempt = { claim: claimOf(row), access: await deps.instructionAccess(row.instructionId) };
    const outcome = await paid(deps, attempt, row, f.txHash);
    return { state: "settled", payment: outcome.kind === "paid" ? outcome.payment : row };
  }
  const failed = async (detail: string): Promise<ChainResolution> => {
    await deps.payments.markFailed(row.id, detail);
    deps.log?.info({ cid: row.cid, payer: row.payer, row: row.id, reason: detail }, "pending payment released");
    return { state: "failed", detail };
  };
  if (f.state === "spent") return failed(f.detail);
  if (f.state === "unused" && f.chainTime >= row.validBefore) return failed("the authorization expired unused");
  if (f.state === "unused")
    return { state: "open", detail: "the authorization is unused and can still be settled until its validBefore" };
  return { state: "open", detail: f.detail };
}

export interface ReconcileRound {
  /** Another replica holds the reconciler's lease: this one looked at nothing. */
  skipped?: true;
  checked: number;
  settled: number;
  released: number;
  open: number;
  errors: number;
}

/** Pending rows looked at per round. */
const PAGE = 500;

export interface ReconcilerOptions {
  intervalSeconds: number;
  /**
   * Several replicas on one database (PostgreSQL): asked before each round, true while this
   * replica holds the reconciler's lease (lease-pg.ts); false skips the round, so one replica at a
   * time reads the chain. None (SQLite, one process): every round runs.
   */
  lease?: () => Promise<boolean>;
  /** Gives the lease up when the reconciler stops, so another replica takes over at once. */
  releaseLease?: () => Promise<void>;
}

export function createReconciler(deps: ReconcileDeps & ReconcilerOptions) {
  let running: Promise<ReconcileRound> | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let stopping = false;
  /**
   * Where the next round's page of pending rows starts: rows the chain cannot decide yet (no RPC for
   * their network, a transaction not found) stay pending, and without a cursor 500 of them would hide
   * every newer row for good.
   */
  let cursor = 0;

  async function round(): Promise<ReconcileRound> {
    const result: ReconcileRound = { checked: 0, settled: 0, released: 0, open: 0, errors: 0 };
    if (!deps.lookup) return result;
    if (deps.lease && !(await holdLease())) return { skipped: true, ...result };
    let rows: Payment[];
    try {
      const page = await deps.payments.unresolved(deps.pendingBefore(), PAGE, cursor);
      rows = [...page, ...(await deps.payments.releasedAfterSettle(Math.floor(Date.now() / 1000)))];
      // Moved only once both reads answered: a failed round must not skip the page it did not look at.
      cursor = page.length === PAGE ? page[page.length - 1].id : 0;
    } catch (error) {
      // A database that does not answer (PostgreSQL restarting, say) skips the round: the next one asks again.
      // Thrown on, it would reach the timer's `void runOnce()` and stop the process.
      deps.log?.warn({ reason: safeReason(error) }, "reconciliation: the pending payments could not be read");
      return { ...result, errors: 1 };
    }
    for (const row of rows) {
      if (stopping) break; // a stopping server waits for one row at most
      result.checked++;
      try {
        const r = await resolveFromChain(deps, row);
        if (r.state === "settled") result.settled++;
        else if (r.state === "failed") result.released++;
        else result.open++;
      } catch (error) {
        result.errors++;
        deps.log?.warn({ row: row.id, reason: safeReason(error) }, "reconciliation: the chain could not be read");
      }
    }
    if (result.settled || result.released || result.errors)
      deps.log?.info({ ...result }, "reconciliation: pending payments resolved from the chain");
    return result;
  }

  /** Whether this replica holds the lease; a database that cannot answer holds nothing (the next round asks again). */
  async function holdLease(): Promise<boolean> {
    try {
      return (await deps.lease?.()) ?? true;
    } catch (error) {
      deps.log?.warn({ reason: safeReason(error) }, "reconciliation: the lease could not be renewed; round skipped");
      return false;
    }
  }

  /** One round now; a round already running is joined, never doubled. */
  function runOnce(): Promise<ReconcileRound> {
    running ??= round().finally(() => {
      running = undefined;
    });
    return running;
  }

  return {
    runOnce,
    /** A round at once, then one every `intervalSeconds`; the timer does not hold the process open. */
    start() {
      if (timer || !deps.lookup) return;
      stopping = false;
      void runOnce();
      timer = setInterval(() => void runOnce(), deps.intervalSeconds * 1000);
      timer.unref?.();
    },
    /** Stops the timer, waits for a round in flight, and gives the lease up. */
    async stop() {
      stopping = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
      await deps
        .releaseLease?.()
        .catch((error) =>
          deps.log?.warn({ reason: safeReason(error) }, "reconciliation: the lease could not be released"),
        );
    },
  };
}

export type Reconciler = ReturnType<typeof createReconciler>;
