/**
 * An operator resolves a pending payment (issue 10, item 11):
 * `cidgate payments resolve <id>` and POST /v3/x402/payments/{id}/resolve.
 * No HTTP types: both adapters call `resolvePayment`.
 *
 * With an RPC for the row's network the chain decides, whatever was asked:
 * paid -> settled with its entitlement; used otherwise or expired -> failed;
 * anything else stays pending and the request is refused (409), so nobody
 * releases an authorization that may still pay. Without an RPC the operator
 * decides: `settle` with the transaction hash they found (a block explorer),
 * or `release`. Every change is recorded in payment_resolutions (who, when,
 * what, on whose word).
 */
import { ApiError, conflict, notFound } from "../http/errors";
import { claimOf, paid } from "./outcome";
import { type ReconcileDeps, resolveFromChain } from "./reconcile";
import type { Resolution, ResolutionStore } from "./resolutions";
import type { Payment } from "./store";

export type ResolveAction = "check" | "settle" | "release";

export interface ResolveRequest {
  id: number;
  /** Default `check`. */
  action?: ResolveAction;
  /** For `settle` without an RPC: the settlement transaction. */
  transaction?: string;
  note?: string;
  /** `api:<subject>/<token id>` or `cli:<user>`. */
  actor: string;
}

export interface ResolveDeps extends ReconcileDeps {
  resolutions: ResolutionStore;
}

const TX = /^0x[0-9a-fA-F]{64}$/;

export async function resolvePayment(
  deps: ResolveDeps,
  request: ResolveRequest,
): Promise<{ payment: Payment; resolution: Resolution }> {
  const action = request.action ?? "check";
  const row = await deps.payments.get(request.id);
  if (!row) throw notFound(`no payment ${request.id}`);
  if (row.state !== "pending") throw conflict(`payment ${row.id} is already ${row.state}`);
  if (request.transaction !== undefined && !TX.test(request.transaction))
    throw new ApiError(400, "invalid_request", "transaction must be a 0x-prefixed 32-byte hex hash", [
      { path: "transaction", message: "must be a 0x-prefixed 32-byte hex hash" },
    ]);
  const record = async (payment: Payment, basis: "chain" | "operator", txHash: string | null) => ({
    payment,
    resolution: await deps.resolutions.record({
      paymentId: row.id,
      action,
      outcome: payment.state,
      basis,
      txHash,
      actor: request.actor,
      note: request.note ?? null,
    }),
  });

  let fromChain: Awaited<ReturnType<typeof resolveFromChain>>;
  try {
    fromChain = await resolveFromChain(deps, row);
  } catch {
    throw new ApiError(503, "chain_unavailable", "the chain could not be read; try again");
  }
  const now = async () => (await deps.payments.get(row.id)) ?? row;
  if (fromChain.state === "settled") return record(fromChain.payment, "chain", fromChain.payment.txHash);
  if (fromChain.state === "failed") return record(await now(), "chain", null);
  if (!fromChain.blind)
    throw conflict(`the chain does not decide payment ${row.id} yet: ${fromChain.detail}; it stays pending`);

  // No RPC: the operator's word, recorded as such.
  if (action === "settle") {
    if (!request.transaction) throw conflict("without an RPC, settle needs the settlement transaction hash");
    const access = await deps.instructionAccess(row.instructionId);
    const outcome = await paid(deps, { claim: claimOf(row), access }, row, request.transaction);
    const payment = outcome.kind === "paid" ? outcome.payment : await now();
    return record(payment, "operator", request.transaction);
  }
  if (action === "release") {
    const released = await deps.payments.markFailed(row.id, `released by an operator (${request.actor}), no RPC`);
    return record(released ?? (await now()), "operator", null);
  }
  throw conflict(`${fromChain.detail}: settle it with its transaction hash, or release it`);
}
