/**
 * What both payments stores (store.ts on SQLite, store-pg.ts on PostgreSQL)
 * build the same way: the list's filters, the rows a claim writes, the
 * unconfirmed-row condition and a page cut from `limit + 1` rows. Written
 * once over either table's columns, so the two engines cannot drift apart.
 */
import { type AnyColumn, and, eq, gt, gte, lt, type SQL, sql } from "drizzle-orm";
import type { AuthorizationKey, PaymentClaim } from "./store";

/** A pending row whose settle went out unanswered carries this prefix in `error` (store.ts `isUnconfirmed`). */
export const UNCONFIRMED = "settlement unconfirmed";

export interface PaymentFilter {
  cid?: string;
  payer?: string;
  instructionId?: string;
  state?: "pending" | "settled" | "failed";
  /** ISO 8601, inclusive. */
  createdFrom?: string;
  /** ISO 8601, exclusive. */
  createdTo?: string;
}

/** The payments columns the conditions name, from either schema (db/schema.ts, db/schema-pg.ts). */
export interface PaymentColumns {
  id: AnyColumn;
  network: AnyColumn;
  asset: AnyColumn;
  payer: AnyColumn;
  nonce: AnyColumn;
  proofHash: AnyColumn;
  validBefore: AnyColumn;
  cid: AnyColumn;
  instructionId: AnyColumn;
  state: AnyColumn;
  error: AnyColumn;
  createdAt: AnyColumn;
  updatedAt: AnyColumn;
}

export function filterConditions(t: PaymentColumns, f: PaymentFilter): SQL[] {
  const where: SQL[] = [];
  if (f.cid) where.push(eq(t.cid, f.cid));
  // Payers are stored checksummed; compare without case so any spelling finds them.
  if (f.payer) where.push(sql`lower(${t.payer}) = ${f.payer.toLowerCase()}`);
  if (f.instructionId) where.push(eq(t.instructionId, f.instructionId));
  if (f.state) where.push(eq(t.state, f.state));
  if (f.createdFrom) where.push(gte(t.createdAt, f.createdFrom));
  if (f.createdTo) where.push(lt(t.createdAt, f.createdTo));
  return where;
}

/**
 * A pending row nobody is settling: its settle went unanswered, or it was last touched before
 * `staleBefore` (its process stopped). The SQL twin of store.ts `isUnconfirmed`, for the rows' state
 * pending.
 */
export function unconfirmedCondition(t: PaymentColumns, staleBefore: string | undefined): SQL {
  const marked = sql`${t.error} LIKE ${`${UNCONFIRMED}%`}`;
  return staleBefore === undefined ? marked : sql`(${marked} OR ${t.updatedAt} < ${staleBefore})`;
}

/** The row of one authorization (unique together); the key's values may be a prepared statement's placeholders. */
export const byAuthorization = (t: PaymentColumns, key: { [K in keyof AuthorizationKey]: unknown }) =>
  and(eq(t.network, key.network), eq(t.asset, key.asset), eq(t.payer, key.payer), eq(t.nonce, key.nonce)) as SQL;

/** The row of one proof: its authorization and signature hash, whatever the asset (v1 proofs do not name it). */
export const byProof = (t: PaymentColumns, key: { network: string; payer: string; nonce: string; proofHash: string }) =>
  and(
    eq(t.payer, key.payer),
    eq(t.nonce, key.nonce),
    eq(t.network, key.network),
    eq(t.proofHash, key.proofHash),
  ) as SQL;

/** The background reconciliation's pending rows: unconfirmed, or untouched since `before`, after id `afterId`. */
export const unresolvedConditions = (t: PaymentColumns, before: string, afterId: number) =>
  and(
    // A literal, not a parameter: what lets either engine use the partial index payments_pending.
    sql`${t.state} = 'pending'`,
    unconfirmedCondition(t, before),
    gt(t.id, afterId),
  ) as SQL;

/** Rows released after their settle went out whose authorization could still land (store.ts `releasedAfterSettle`). */
export const releasedAfterSettleConditions = (t: PaymentColumns, nowSeconds: number, slackSeconds: number) =>
  and(eq(t.state, "failed"), sql`${t.error} LIKE 'settle:%'`, gt(t.validBefore, nowSeconds - slackSeconds)) as SQL;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** The fields a claim writes into a new or released row: pending, live (no error). */
export function claimFields(claim: PaymentClaim, now: string) {
  return {
    cid: claim.cid,
    instructionId: claim.instructionId,
    instructionVersion: claim.instructionVersion,
    amount: claim.amount,
    payTo: claim.payTo,
    state: "pending" as const,
    txHash: null,
    // Clamped to what a JS number (and so both engines' columns, read as numbers) holds exactly.
    validBefore: Number(claim.validBefore > MAX_SAFE ? MAX_SAFE : claim.validBefore),
    x402Version: claim.x402Version,
    proofHash: claim.proofHash,
    error: null,
    updatedAt: now,
  };
}

/** A page from `limit + 1` rows read: the extra row only says that there is more. */
export function pageOf<T extends { id: number }>(rows: T[], limit: number) {
  const more = rows.length > limit;
  const items = more ? rows.slice(0, limit) : rows;
  return { items, nextAfterId: more ? items[items.length - 1].id : undefined };
}
