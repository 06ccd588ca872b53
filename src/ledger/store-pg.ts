/**
 * The payments table on PostgreSQL (CIDGATE_DB=postgres://...): store.ts's
 * store, same rows, same answers, for several replicas on one database.
 *
 * What differs is how a claim stays single across processes. SQLite
 * serializes every writer on the file, so store.ts reads and writes inside
 * one transaction. Here replicas claim concurrently, and every decision is
 * one statement the database arbitrates: the unique key
 * payments_authorization decides between two inserts, and a conditional
 * UPDATE ... WHERE <the row is still claimable> RETURNING between two
 * re-claims of a row (the second waits for the first's row lock, then finds
 * the condition false). A replica that loses gets the row, unclaimed.
 *
 * Every query goes through `pg.q()`, so a caller's `pg.transaction` covers it.
 */
import { and, asc, desc, eq, gt, lt, type SQL, sql } from "drizzle-orm";
import type { Async } from "../db/awaitable";
import type { Pg } from "../db/pg";
import { payments } from "../db/schema-pg";
import {
  byAuthorization,
  byProof,
  claimFields,
  filterConditions,
  type PaymentFilter,
  pageOf,
  releasedAfterSettleConditions,
  UNCONFIRMED,
  unconfirmedCondition,
  unresolvedConditions,
} from "./payment-conditions";
import {
  type AuthorizationKey,
  type ClaimResult,
  isUnconfirmed,
  type Payment,
  type PaymentClaim,
  type SqlitePaymentStore,
} from "./store";
import { ledgerTotals, rollupTotals } from "./totals-pg";

const nowIso = () => new Date().toISOString();

/**
 * How often a claim looks again when the row it collided with is gone before it could be read
 * (pruned in between) or changed under its conditional update: each retry follows another
 * writer's commit, so a few are plenty.
 */
const CLAIM_ATTEMPTS = 5;

/**
 * Rows beyond a time range's edge that a list walks past rather than bounding its walk (store-pg
 * `list`): skipping 5,000 rows costs about what counting them does (~1-2 ms), so below it the
 * bound (an aggregate over the whole range) cannot pay for itself.
 */
const BEYOND_PROBE = 5000;

export function createPgPaymentStore(pg: Pg): Async<SqlitePaymentStore> {
  const first = async <T>(rows: Promise<T[]>): Promise<T | undefined> => (await rows)[0];
  const find = (key: AuthorizationKey): Promise<Payment | undefined> =>
    first(pg.q().select().from(payments).where(byAuthorization(payments, key)).limit(1));

  /** Updates row `id` only while `condition` holds: the row, or undefined when another writer got there first. */
  const updateIf = (
    id: number,
    set: Partial<typeof payments.$inferInsert>,
    condition: SQL,
  ): Promise<Payment | undefined> =>
    first(
      pg
        .q()
        .update(payments)
        .set(set)
        .where(and(eq(payments.id, id), condition))
        .returning(),
    );

  /** Only a pending row changes state: a late answer cannot flip a settled or released one. */
  const whilePending = (id: number, set: Partial<typeof payments.$inferInsert>) =>
    updateIf(id, set, eq(payments.state, "pending"));

  async function claim(c: PaymentClaim, options: { staleBefore?: string } = {}): Promise<ClaimResult> {
    for (let attempt = 0; ; attempt++) {
      const now = nowIso();
      const existing = await find(c);
      if (!existing) {
        // Read first, insert only when absent: a presentation of a known authorization (every retry,
        // every refused replay) takes no value from the id sequence, which ON CONFLICT would, so ids
        // stay gapless as on SQLite but for a true race between two replicas.
        const inserted = await first(
          pg
            .q()
            .insert(payments)
            .values({
              ...claimFields(c, now),
              network: c.network,
              asset: c.asset,
              payer: c.payer,
              nonce: c.nonce,
              createdAt: now,
            })
            .onConflictDoNothing({ target: [payments.network, payments.asset, payments.payer, payments.nonce] })
            .returning(),
        );
        if (inserted) return { claimed: true, payment: inserted, resolve: false };
      } else if (existing.state === "failed") {
        // Released: claimable again by anyone, but by one replica only.
        const payment = await updateIf(existing.id, claimFields(c, now), eq(payments.state, "failed"));
        if (payment) return { claimed: true, payment, resolve: false };
      } else if (
        isUnconfirmed(existing, options.staleBefore) &&
        existing.cid === c.cid &&
        existing.proofHash === c.proofHash
      ) {
        // Nobody is settling it (unconfirmed, or stale): the same proof for the same CID may resolve it, once.
        const payment = await updateIf(
          existing.id,
          { error: null, updatedAt: now },
          and(
            eq(payments.state, "pending"),
            eq(payments.cid, c.cid),
            eq(payments.proofHash, c.proofHash),
            unconfirmedCondition(payments, options.staleBefore),
          ) as SQL,
        );
        if (payment) return { claimed: true, payment, resolve: true };
        // Made live by another replica a moment ago (theirs now), unless it has been released since.
        const current = await find(c);
        if (current && current.state !== "failed") return { claimed: false, payment: current };
      } else {
        return { claimed: false, payment: existing };
      }
      // Lost a race (the row appeared, vanished or changed between the read and the write): look again.
      if (attempt + 1 >= CLAIM_ATTEMPTS) {
        const row = await find(c);
        if (row) return { claimed: false, payment: row };
        throw new Error("payments: an authorization's row kept changing under its claim");
      }
    }
  }

  return {
    find,

    heldFor: (payer, cid) =>
      first(
        pg
          .q()
          .select()
          .from(payments)
          .where(and(eq(payments.payer, payer), eq(payments.cid, cid), eq(payments.state, "pending")))
          .orderBy(desc(payments.id))
          .limit(1),
      ),

    get: (id) => first(pg.q().select().from(payments).where(eq(payments.id, id)).limit(1)),

    findByProof: (key) => first(pg.q().select().from(payments).where(byProof(payments, key)).limit(1)),

    claim,

    unresolved: (before, limit = 500, afterId = 0) =>
      pg
        .q()
        .select()
        .from(payments)
        .where(unresolvedConditions(payments, before, afterId))
        .orderBy(asc(payments.id))
        .limit(limit),

    releasedAfterSettle: (nowSeconds, slackSeconds = 300) =>
      pg
        .q()
        .select()
        .from(payments)
        .where(releasedAfterSettleConditions(payments, nowSeconds, slackSeconds))
        .orderBy(asc(payments.id))
        .limit(500),

    settleReleased: (id, txHash) =>
      updateIf(id, { state: "settled", txHash, error: null, updatedAt: nowIso() }, eq(payments.state, "failed")),

    markSettled: (id, txHash) => whilePending(id, { state: "settled", txHash, error: null, updatedAt: nowIso() }),

    async pruneRefusedAtVerify(before, limit = 1000) {
      const rows = await pg.q().execute<{ id: string }>(
        sql`DELETE FROM payments WHERE id IN (SELECT id FROM payments
            WHERE state = 'failed' AND error LIKE 'verify:%' AND updated_at < ${before} LIMIT ${limit})
            RETURNING id`,
      );
      return rows.length;
    },

    markFailed: (id, error) => whilePending(id, { state: "failed", error: error.slice(0, 500), updatedAt: nowIso() }),

    markUnconfirmed: (id, detail) =>
      whilePending(id, { error: `${UNCONFIRMED}: ${detail}`.slice(0, 500), updatedAt: nowIso() }),

    async list(f, page) {
      const order = page.order ?? "desc";
      const where = filterConditions(payments, f);
      // A range with an edge the walk along the primary key meets first (its end for the newest
      // first, its start for the oldest first): left alone, PostgreSQL walks the key from that end
      // and filters out every row beyond the edge. With more than BEYOND_PROBE rows there, the walk
      // starts at the range's largest (smallest) id instead; `id + 0` keeps PostgreSQL from finding
      // that by the same walk, so the range's ids come from the created_at index. Both subqueries
      // run only when reached (PostgreSQL evaluates them on first use). A page of 50 of a million
      // payments, a year's worth (PostgreSQL 15, 2 shared cores): June (80,000 rows, 500,000 newer)
      // 158 ms unbounded, 20-26 ms bounded, 14 ms since the bound's aggregate reads the
      // (created_at, id) index alone (drizzle-pg/0004); a range ending now, under 1 ms. Worst case: a
      // range holding most of the table with more than BEYOND_PROBE rows past its end (January to
      // November) pays the aggregate over all of it. Exact either way: the range's own conditions stay.
      const range = and(...filterConditions(payments, { createdFrom: f.createdFrom, createdTo: f.createdTo }));
      const edge =
        order === "desc"
          ? f.createdTo && {
              beyond: sql`${payments.createdAt} >= ${f.createdTo}`,
              op: sql`<=`,
              agg: sql`max`,
              open: sql.raw("9223372036854775807"), // no bound: a constant, so the key walk still starts at once
            }
          : f.createdFrom && {
              beyond: sql`${payments.createdAt} < ${f.createdFrom}`,
              op: sql`>=`,
              agg: sql`min`,
              open: sql.raw("0"),
            };
      if (edge)
        where.push(
          sql`${payments.id} ${edge.op} CASE
            WHEN (SELECT count(*) FROM (SELECT 1 FROM ${payments} WHERE ${edge.beyond} LIMIT ${BEYOND_PROBE}) beyond) < ${BEYOND_PROBE}
            THEN ${edge.open}
            ELSE (SELECT ${edge.agg}(${payments.id} + 0) FROM ${payments} WHERE ${range}) END`,
        );
      if (page.afterId !== undefined)
        where.push(order === "desc" ? lt(payments.id, page.afterId) : gt(payments.id, page.afterId));
      const read = () =>
        pg
          .q()
          .select()
          .from(payments)
          .where(where.length ? and(...where) : undefined)
          .orderBy(order === "desc" ? desc(payments.id) : asc(payments.id))
          .limit(page.limit + 1);
      if (!edge) return pageOf(await read(), page.limit);
      // Planned for its own bounds: the generic plan PostgreSQL keeps for a prepared statement after
      // five runs cannot tell a month from a year, and walks the key regardless (June above: 59-72 ms
      // generic, 20-26 ms planned per call, for the SET and the transaction's round trips).
      const rows = await pg.transaction(async (tx) => {
        await tx.execute(sql`SET LOCAL plan_cache_mode = force_custom_plan`);
        return read();
      });
      return pageOf(rows, page.limit);
    },

    async totals(f: PaymentFilter) {
      if (f.state && f.state !== "settled") return [];
      // Whole hours from the sales rollups, as on SQLite; a CID or a payer is the ledger's to sum.
      if (!f.cid && !f.payer)
        return rollupTotals(pg.q(), { from: f.createdFrom, to: f.createdTo, instructionId: f.instructionId });
      return ledgerTotals(pg.q(), and(...filterConditions(payments, { ...f, state: "settled" })) as SQL);
    },
  };
}
