/**
 * The entitlements table on PostgreSQL: the same store as store.ts (see
 * there), answering with promises. Every query goes through `pg.q()`, so
 * `grantForPayment` joins the settler's transaction (the payment, its
 * entitlement and its webhook event commit together), and the events of a
 * grant or revoke are awaited inside the write, so the outbox row commits
 * with it or not at all.
 *
 * Idempotence per payment is the unique index on payment_id: a second grant
 * (a retried settle, a recovery, another replica) inserts nothing, waiting
 * for the first one's transaction if it is still open, then reads its row.
 */
import { and, desc, eq, isNull, or } from "drizzle-orm";
import { checksumOrUndefined as checksummed } from "../chain/address";
import type { Async } from "../db/awaitable";
import type { Pg } from "../db/pg";
import { entitlements } from "../db/schema-pg";
import type { EntitlementEvents } from "../notifications/hooks";
import { activeAt, keysetPage, listWhere } from "./filter";
import { expiryOf } from "./policy";
import { type Entitlement, grantRow, iso, longestLasting, type SqliteEntitlementStore } from "./store";

export type PgEntitlementStore = Async<SqliteEntitlementStore>;

export function createPgEntitlementStore(pg: Pg, events?: EntitlementEvents): PgEntitlementStore {
  const t = entitlements;
  const first = (rows: Entitlement[]) => rows[0] as Entitlement | undefined;
  const get = async (id: number) => first(await pg.q().select().from(t).where(eq(t.id, id)).limit(1));

  return {
    async active(payer, cid, instructionId, nowSeconds) {
      const who = checksummed(payer);
      if (!who) return undefined;
      // No ORDER BY, as on SQLite: a payer has one or two rows here, and longestLasting picks in JS.
      const rows = await pg
        .q()
        .select()
        .from(t)
        .where(
          and(
            eq(t.payer, who),
            activeAt(t, nowSeconds),
            or(
              and(eq(t.scope, "cid"), eq(t.cid, cid)),
              and(eq(t.scope, "instruction"), eq(t.instructionId, instructionId)),
            ),
          ),
        );
      return longestLasting(rows);
    },

    async grantForPayment(input) {
      const expiresAt = expiryOf(input.policy, input.nowSeconds);
      if (expiresAt === undefined) return undefined;
      const row = first(
        await pg
          .q()
          .insert(t)
          .values({
            payer: checksummed(input.payer) ?? input.payer,
            scope: input.scope,
            cid: input.scope === "cid" ? input.cid : null,
            instructionId: input.instructionId,
            source: "payment",
            paymentId: input.paymentId,
            grantedAt: iso(input.nowSeconds),
            expiresAt,
          })
          .onConflictDoNothing({ target: t.paymentId })
          .returning(),
      );
      if (row) {
        await events?.granted(row); // in the caller's transaction, like the row
        return row;
      }
      return first(await pg.q().select().from(t).where(eq(t.paymentId, input.paymentId)).limit(1));
    },

    async grant(input, nowSeconds) {
      const payer = checksummed(input.payer);
      if (!payer) throw new Error(`not an address: ${input.payer}`);
      // The row and its webhook event together.
      return pg.transaction(async () => {
        const [row] = await pg
          .q()
          .insert(t)
          .values(grantRow(input, payer, nowSeconds))
          .returning();
        await events?.granted(row);
        return row;
      });
    },

    async revoke(id, nowSeconds) {
      return pg.transaction(async () => {
        const revoked = first(
          await pg
            .q()
            .update(t)
            .set({ revokedAt: iso(nowSeconds) })
            .where(and(eq(t.id, id), isNull(t.revokedAt)))
            .returning(),
        );
        if (revoked) await events?.revoked(revoked); // the first revoke only
        return revoked ?? get(id);
      });
    },

    get,

    async list(filter, page) {
      const rows = await pg
        .q()
        .select()
        .from(t)
        .where(listWhere(t, filter, page.afterId))
        .orderBy(desc(t.id))
        .limit(page.limit + 1);
      return keysetPage(rows, page.limit);
    },
  };
}
