/**
 * The payment_resolutions table on PostgreSQL: resolutions.ts's audit trail
 * (who resolved which pending payment, how, on whose word), rows only added.
 */
import { asc, eq } from "drizzle-orm";
import type { Async } from "../db/awaitable";
import type { Pg } from "../db/pg";
import { paymentResolutions } from "../db/schema-pg";
import type { SqliteResolutionStore } from "./resolutions";

export function createPgResolutionStore(pg: Pg): Async<SqliteResolutionStore> {
  return {
    async record(r) {
      const [row] = await pg
        .q()
        .insert(paymentResolutions)
        .values({ ...r, note: r.note?.slice(0, 500) ?? null, createdAt: new Date().toISOString() })
        .returning();
      return row;
    },
    forPayment: (paymentId) =>
      pg
        .q()
        .select()
        .from(paymentResolutions)
        .where(eq(paymentResolutions.paymentId, paymentId))
        .orderBy(asc(paymentResolutions.id)),
  };
}
