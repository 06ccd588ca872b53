/**
 * The payment_resolutions table's one writer: the audit trail of what
 * operators did to pending payments (who, when, what, on whose word).
 * Rows are only ever added.
 */

import { asc, eq } from "drizzle-orm";
import type { Awaitable } from "../db/awaitable";
import type { Db } from "../db/client";
import { paymentResolutions } from "../db/schema";

export type Resolution = typeof paymentResolutions.$inferSelect;
export type NewResolution = Omit<typeof paymentResolutions.$inferInsert, "id" | "createdAt">;

export function createResolutionStore(db: Db) {
  return {
    record(r: NewResolution): Resolution {
      return db
        .insert(paymentResolutions)
        .values({ ...r, note: r.note?.slice(0, 500) ?? null, createdAt: new Date().toISOString() })
        .returning()
        .get();
    },
    /** A payment's resolutions, oldest first. */
    forPayment(paymentId: number): Resolution[] {
      return db
        .select()
        .from(paymentResolutions)
        .where(eq(paymentResolutions.paymentId, paymentId))
        .orderBy(asc(paymentResolutions.id))
        .all();
    },
  };
}

/** The SQLite store, synchronous; the app holds `ResolutionStore`, which a PostgreSQL store implements too. */
export type SqliteResolutionStore = ReturnType<typeof createResolutionStore>;
export type ResolutionStore = Awaitable<SqliteResolutionStore>;
