/**
 * The entitlements list's WHERE, for either engine's table: drizzle renders
 * the same conditions in each dialect, so the SQLite store and the
 * PostgreSQL one filter, page and treat `active` by one definition.
 */
import { type AnyColumn, and, eq, gt, isNull, lt, or, type SQL, sql } from "drizzle-orm";
import { checksumOrUndefined } from "../chain/address";
import type { EntitlementFilter } from "./store";

/** The columns the filters read, as both schemas name them. */
export interface EntitlementColumns {
  id: AnyColumn;
  payer: AnyColumn;
  cid: AnyColumn;
  instructionId: AnyColumn;
  revokedAt: AnyColumn;
  expiresAt: AnyColumn;
}

/** Usable at `now`: not revoked and not expired (an expiry is the first second it no longer holds). */
export function activeAt(t: EntitlementColumns, now: SQL | number): SQL {
  return and(isNull(t.revokedAt), or(isNull(t.expiresAt), gt(t.expiresAt, now)))!;
}

/** The WHERE of one page of `list` (undefined: every row). */
export function listWhere(t: EntitlementColumns, filter: EntitlementFilter, afterId?: number): SQL | undefined {
  const where: SQL[] = [];
  if (filter.payer) where.push(eq(t.payer, checksumOrUndefined(filter.payer) ?? filter.payer));
  if (filter.cid) where.push(eq(t.cid, filter.cid));
  if (filter.instructionId) where.push(eq(t.instructionId, filter.instructionId));
  if (filter.active !== undefined) {
    if (filter.now === undefined) throw new Error("list: the active filter needs now");
    const live = activeAt(t, filter.now);
    where.push(filter.active ? live : sql`NOT (${live})`);
  }
  if (afterId !== undefined) where.push(lt(t.id, afterId));
  return where.length ? and(...where) : undefined;
}

/** A page from `limit + 1` rows read newest first: the rows to answer, and the key of the next page. */
export function keysetPage<R extends { id: number }>(rows: R[], limit: number) {
  const more = rows.length > limit;
  const items = more ? rows.slice(0, limit) : rows;
  return { items, nextAfterId: more ? items[items.length - 1].id : undefined };
}
