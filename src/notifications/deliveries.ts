/**
 * What both engines' notification stores say the same way: the delivery
 * log's filters, what an attempt changes on its row, and which webhooks an
 * event goes to. drizzle renders these conditions in either dialect.
 */
import { type AnyColumn, and, eq, lt, type SQL, sql } from "drizzle-orm";
import type { DeliveryFilter, DeliveryState } from "./store";

/** The delivery columns the filters and an attempt's changes name, as both schemas name them. */
export interface DeliveryColumns {
  id: AnyColumn;
  webhookId: AnyColumn;
  state: AnyColumn;
  eventType: AnyColumn;
  attempts: AnyColumn;
}

/** The WHERE of one page of the delivery log (undefined: every row). */
export function deliveryWhere(t: DeliveryColumns, f: DeliveryFilter, afterId?: number): SQL | undefined {
  const where: SQL[] = [];
  if (f.webhookId) where.push(eq(t.webhookId, f.webhookId));
  if (f.state) where.push(eq(t.state, f.state));
  if (f.eventType) where.push(eq(t.eventType, f.eventType));
  if (afterId !== undefined) where.push(lt(t.id, afterId));
  return where.length ? and(...where) : undefined;
}

export interface Attempt {
  ok: boolean;
  status: number | null;
  error: string | null;
  at: string;
  retryAt?: string;
}

/** An attempt's changes to its row: delivered, or due again at `retryAt`, or failed for good (no `retryAt`). */
export function attemptChanges(t: DeliveryColumns, attempt: Attempt) {
  return {
    attempts: sql`${t.attempts} + 1`,
    lastAttemptAt: attempt.at,
    lastStatus: attempt.status,
    lastError: attempt.error,
    ...(attempt.ok
      ? { state: "delivered" as const, deliveredAt: attempt.at }
      : attempt.retryAt
        ? { nextAttemptAt: attempt.retryAt }
        : { state: "failed" as const }),
  };
}

/** Deliveries per state, every state present (a missing one is 0). */
export function countsOf(rows: readonly { state: DeliveryState; n: number }[]): Record<DeliveryState, number> {
  const out: Record<DeliveryState, number> = { pending: 0, delivered: 0, failed: 0 };
  for (const r of rows) out[r.state] = r.n;
  return out;
}
