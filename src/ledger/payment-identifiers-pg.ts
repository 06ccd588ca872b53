/**
 * The payment_identifiers table on PostgreSQL: payment-identifiers.ts's
 * store for replicas sharing one database. The primary key decides which of
 * two racing requests, on any replica, is "new": an insert that does nothing
 * on conflict, then a read of the row that won.
 */
import { and, eq, isNull } from "drizzle-orm";
import type { Async } from "../db/awaitable";
import type { Pg } from "../db/pg";
import { paymentIdentifiers } from "../db/schema-pg";
import type { RememberResult, SqlitePaymentIdentifierStore } from "./payment-identifiers";

export function createPgPaymentIdentifierStore(pg: Pg): Async<SqlitePaymentIdentifierStore> {
  const find = async (id: string) =>
    (await pg.q().select().from(paymentIdentifiers).where(eq(paymentIdentifiers.id, id)).limit(1))[0];

  return {
    async remember(id, payloadHash, nowIso): Promise<RememberResult> {
      // Twice at most: a row released between the insert and the read is inserted again.
      for (let attempt = 0; attempt < 2; attempt++) {
        const inserted = await pg
          .q()
          .insert(paymentIdentifiers)
          .values({ id, payloadHash, paymentId: null, createdAt: nowIso })
          .onConflictDoNothing({ target: paymentIdentifiers.id })
          .returning({ id: paymentIdentifiers.id });
        if (inserted.length === 1) return { kind: "new" };
        const row = await find(id);
        if (!row) continue;
        return row.payloadHash === payloadHash ? { kind: "same", paymentId: row.paymentId } : { kind: "conflict" };
      }
      return { kind: "conflict" };
    },
    async attach(id, paymentId) {
      await pg.q().update(paymentIdentifiers).set({ paymentId }).where(eq(paymentIdentifiers.id, id));
    },
    async release(id, payloadHash) {
      await pg
        .q()
        .delete(paymentIdentifiers)
        .where(
          and(
            eq(paymentIdentifiers.id, id),
            eq(paymentIdentifiers.payloadHash, payloadHash),
            isNull(paymentIdentifiers.paymentId),
          ),
        );
    },
    find,
  };
}
