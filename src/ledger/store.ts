/**
 * The payments table: one row per EIP-3009 authorization (network, asset,
 * payer, nonce), ever. It is the replay guard as well as the record of
 * revenue. Claims are synchronous SQLite transactions, so a claim and the
 * check before it cannot interleave with another request's.
 *
 * This store is the table's only writer; the settler (settler.ts) decides
 * what to write, the routes read through it.
 */

import { and, asc, count, desc, eq, gt, gte, lt, type SQL, sql } from "drizzle-orm";
import type { Awaitable } from "../db/awaitable";
import type { Db } from "../db/client";
import { payments } from "../db/schema";
import { createStatsQueries } from "../stats/queries";
import {
  byAuthorization,
  byProof,
  claimFields,
  filterConditions as conditionsOn,
  type PaymentFilter,
  pageOf,
  releasedAfterSettleConditions,
  UNCONFIRMED,
  unresolvedConditions,
} from "./payment-conditions";

export type Payment = typeof payments.$inferSelect;
export type PaymentState = Payment["state"];

/** The authorization a row stands for: unique together. */
export interface AuthorizationKey {
  network: string;
  asset: string;
  payer: string;
  nonce: string;
}

export interface PaymentClaim extends AuthorizationKey {
  cid: string;
  instructionId: string;
  instructionVersion: number;
  amount: string;
  payTo: string;
  /** Unix seconds; clamped to what SQLite and JS numbers hold exactly. */
  validBefore: bigint;
  x402Version: 1 | 2;
  proofHash: string;
}

export type ClaimResult =
  /**
   * This request holds the authorization now and must settle or release it.
   * `resolve`: a settlement of this very proof may already have been sent
   * (its outcome was never learnt): find out what became of it before
   * anything else, never verify it afresh.
   */
  | { claimed: true; payment: Payment; resolve: boolean }
  /** Someone holds or used it already: pending or settled. */
  | { claimed: false; payment: Payment };

/*
 * A pending row whose settle was sent but never answered carries the prefix
 * UNCONFIRMED in `error`; a live claim has `error` null. Such a row stays
 * pending (the money may have moved) until the same proof resolves it.
 */
export { type PaymentFilter, UNCONFIRMED } from "./payment-conditions";

/** A pending row nobody is settling right now: its settle went unanswered, or its process stopped. */
export function isUnconfirmed(row: Payment, staleBefore?: string): boolean {
  if (row.state !== "pending") return false;
  return (row.error?.startsWith(UNCONFIRMED) ?? false) || (staleBefore !== undefined && row.updatedAt < staleBefore);
}

const nowIso = () => new Date().toISOString();

/*
 * The paid request's statements, prepared once per database: drizzle's query
 * builder costs 0.2-0.4 ms per call, more than SQLite's own work here.
 */
function prepareStatements(db: Db) {
  const p = sql.placeholder;
  return {
    findByAuthorization: db
      .select()
      .from(payments)
      .where(
        byAuthorization(payments, { network: p("network"), asset: p("asset"), payer: p("payer"), nonce: p("nonce") }),
      )
      .prepare(),
    insertClaim: db
      .insert(payments)
      .values({
        network: p("network"),
        asset: p("asset"),
        payer: p("payer"),
        nonce: p("nonce"),
        cid: p("cid"),
        instructionId: p("instructionId"),
        instructionVersion: p("instructionVersion"),
        amount: p("amount"),
        payTo: p("payTo"),
        state: "pending",
        txHash: null,
        validBefore: p("validBefore"),
        x402Version: p("x402Version"),
        proofHash: p("proofHash"),
        error: null,
        createdAt: p("now"),
        updatedAt: p("now"),
      })
      .returning()
      .prepare(),
    heldFor: db
      .select()
      .from(payments)
      // Through the small partial index payments_pending (the rows being settled now): `state = 'pending'` a
      // literal (a parameter cannot match the index's WHERE), and `+` keeping the planner off the payer and
      // cid indexes, which it took and then walked every row of the payer: 6.4 ms per purchase for a buyer
      // with 20,000 rows, 16 us now (bench/returning-buyer.ts).
      .where(
        and(
          sql`+${payments.payer} = ${p("payer")}`,
          sql`+${payments.cid} = ${p("cid")}`,
          sql`${payments.state} = 'pending'`,
        ),
      )
      .orderBy(desc(payments.id))
      .limit(1)
      .prepare(),
    byId: db
      .select()
      .from(payments)
      .where(eq(payments.id, p("id")))
      .prepare(),
    markSettled: db
      .update(payments)
      .set({ state: "settled", txHash: sql`${p("txHash")}`, error: null, updatedAt: sql`${p("now")}` })
      .where(and(eq(payments.id, p("id")), eq(payments.state, "pending")))
      .returning()
      .prepare(),
  };
}

const filterConditions = (f: PaymentFilter) => conditionsOn(payments, f);

/** The payments store of one database: the table's only writer. */
export function createPaymentStore(db: Db) {
  const statements = prepareStatements(db);
  const rollup = createStatsQueries(db.sqlite);

  return {
    find(key: AuthorizationKey): Payment | undefined {
      return statements.findByAuthorization.get({
        network: key.network,
        asset: key.asset,
        payer: key.payer,
        nonce: key.nonce,
      });
    },

    /** This payer's newest row for this CID that is still pending (being settled, or unconfirmed). */
    heldFor(payer: string, cid: string): Payment | undefined {
      return statements.heldFor.get({ payer, cid });
    },

    /** A row by its id: the payment an entitlement came from, for its receipt. */
    get(id: number): Payment | undefined {
      return statements.byId.get({ id });
    },

    /** The row of a proof by its authorization and signature hash, whatever the asset (v1 proofs do not name it). */
    findByProof(key: { network: string; payer: string; nonce: string; proofHash: string }): Payment | undefined {
      return db.select().from(payments).where(byProof(payments, key)).get();
    },

    /**
     * Claims an authorization before any facilitator call. A row left `failed`
     * (facilitator unreachable before settle, verify refused, settle refused)
     * is released: the next presentation may claim it again. A pending row
     * nobody is settling (its settle went unanswered, or it has been pending
     * since before `staleBefore`: its process stopped, since a live settlement
     * is bounded in time) may have been paid on chain: only the same proof for
     * the same CID may claim it, to resolve it (`resolve: true`). Other pending
     * rows and settled rows are returned unclaimed for the caller to decide.
     */
    claim(claim: PaymentClaim, options: { staleBefore?: string } = {}): ClaimResult {
      // bun:sqlite's own transaction (drizzle's wrapper cost more than the statements in it: claim and
      // markSettled 67-92 -> 47-50 us, bench/returning-buyer.ts), IMMEDIATE: it reads then writes, so it
      // takes the write lock first and waits out another process's writer (busy_timeout) instead of
      // failing its upgrade.
      return db.sqlite
        .transaction(() => {
          const existing = statements.findByAuthorization.get({
            network: claim.network,
            asset: claim.asset,
            payer: claim.payer,
            nonce: claim.nonce,
          });
          const now = nowIso();
          if (existing && isUnconfirmed(existing, options.staleBefore)) {
            if (existing.cid !== claim.cid || existing.proofHash !== claim.proofHash)
              return { claimed: false as const, payment: existing };
            // Live again: other requests (and processes) now see a settlement in progress.
            const payment = db
              .update(payments)
              .set({ error: null, updatedAt: now })
              .where(and(eq(payments.id, existing.id), eq(payments.state, "pending")))
              .returning()
              .get()!;
            return { claimed: true as const, payment, resolve: true };
          }
          if (existing && existing.state !== "failed") return { claimed: false as const, payment: existing };
          const fields = claimFields(claim, now);
          const payment = existing
            ? db.update(payments).set(fields).where(eq(payments.id, existing.id)).returning().get()
            : statements.insertClaim.get({
                ...fields,
                network: claim.network,
                asset: claim.asset,
                payer: claim.payer,
                nonce: claim.nonce,
                now,
              })!;
          return { claimed: true as const, payment, resolve: false };
        })
        .immediate();
    },

    /**
     * Pending rows that are unconfirmed or were last updated before `before`,
     * oldest first, after id `afterId`: what the background reconciliation
     * resolves from the chain, a page per round.
     */
    unresolved(before: string, limit = 500, afterId = 0): Payment[] {
      return db
        .select()
        .from(payments)
        .where(unresolvedConditions(payments, before, afterId))
        .orderBy(asc(payments.id))
        .limit(limit)
        .all();
    },

    /**
     * Rows released after their settle went out (`settle: …`, a remote facilitator's refusal with the
     * nonce unused at that moment) whose authorization could still land (validBefore, plus `slackSeconds`,
     * not passed): a transaction still in flight then may yet pay. The reconciliation looks them up.
     */
    releasedAfterSettle(nowSeconds: number, slackSeconds = 300): Payment[] {
      return db
        .select()
        .from(payments)
        .where(releasedAfterSettleConditions(payments, nowSeconds, slackSeconds))
        .orderBy(asc(payments.id))
        .limit(500)
        .all();
    },

    /**
     * A released row the chain shows as paid after all: settled. Only a `failed` row changes
     * (undefined otherwise). The settler never calls this; the reconciliation does.
     */
    settleReleased(id: number, txHash: string): Payment | undefined {
      return db
        .update(payments)
        .set({ state: "settled", txHash, error: null, updatedAt: nowIso() })
        .where(and(eq(payments.id, id), eq(payments.state, "failed")))
        .returning()
        .get();
    },

    /** Marks a pending row settled; undefined when the row was not pending. */
    markSettled(id: number, txHash: string): Payment | undefined {
      return statements.markSettled.get({ id, txHash, now: nowIso() });
    },

    /** Releases a claim: the authorization was not spent and may be presented again. */
    /**
     * Deletes rows of proofs the facilitator refused at verify, last touched
     * before `before` (ISO), at most `limit` of them; returns how many. Such a
     * row never moved money and its authorization is free again, so nothing
     * needs it once the window for reading it has passed (ledger/prune.ts).
     */
    pruneRefusedAtVerify(before: string, limit = 1000): number {
      return db.sqlite
        .query(
          `DELETE FROM payments WHERE id IN (SELECT id FROM payments
           WHERE state = 'failed' AND error LIKE 'verify:%' AND updated_at < ? LIMIT ?)`,
        )
        .run(before, limit).changes;
    },

    markFailed(id: number, error: string): Payment | undefined {
      return db
        .update(payments)
        .set({ state: "failed", error: error.slice(0, 500), updatedAt: nowIso() })
        .where(and(eq(payments.id, id), eq(payments.state, "pending")))
        .returning()
        .get();
    },

    /**
     * Leaves a pending row pending, marked unconfirmed: its settle went out
     * and no answer came back (or the transaction is not mined yet). It is
     * neither released nor settled until the same proof resolves it.
     */
    markUnconfirmed(id: number, detail: string): Payment | undefined {
      return db
        .update(payments)
        .set({ error: `${UNCONFIRMED}: ${detail}`.slice(0, 500), updatedAt: nowIso() })
        .where(and(eq(payments.id, id), eq(payments.state, "pending")))
        .returning()
        .get();
    },

    /**
     * One page, newest first, keyed by row id (keyset paging: stable while rows
     * are added). `afterId` is the last id of the previous page.
     */
    list(f: PaymentFilter, page: { limit: number; afterId?: number; order?: "desc" | "asc" }) {
      const order = page.order ?? "desc";
      const where = filterConditions({ ...f, createdFrom: undefined, createdTo: undefined });
      if (f.createdFrom || f.createdTo) {
        // A time range pages along the rowid from the range's largest (smallest) id, found in the
        // created_at index alone, never through that index and a sort of the whole range: a month
        // of a million payments, 5.5 ms against 125 ms (docs/BENCHMARKS.md). Exact either way: the
        // range's conditions stay; `+` keeps the planner off the created_at index for them.
        const range: SQL[] = [];
        if (f.createdFrom) range.push(gte(payments.createdAt, f.createdFrom));
        if (f.createdTo) range.push(lt(payments.createdAt, f.createdTo));
        if (f.createdFrom) where.push(sql`+${payments.createdAt} >= ${f.createdFrom}`);
        if (f.createdTo) where.push(sql`+${payments.createdAt} < ${f.createdTo}`);
        where.push(
          order === "desc"
            ? sql`${payments.id} <= (SELECT max(${payments.id}) FROM ${payments} WHERE ${and(...range)})`
            : sql`${payments.id} >= (SELECT min(${payments.id}) FROM ${payments} WHERE ${and(...range)})`,
        );
      }
      if (page.afterId !== undefined)
        where.push(order === "desc" ? lt(payments.id, page.afterId) : gt(payments.id, page.afterId));
      const rows = db
        .select()
        .from(payments)
        .where(where.length ? and(...where) : undefined)
        .orderBy(order === "desc" ? desc(payments.id) : asc(payments.id))
        .limit(page.limit + 1)
        .all();
      return pageOf(rows, page.limit);
    },

    /**
     * Settled revenue per network and asset over every row the filter selects
     * (not one page). Amounts are exact decimal strings: SQLite sums them as
     * 64-bit integers and raises on overflow, in which case JS sums BigInts.
     */
    totals(f: PaymentFilter) {
      if (f.state && f.state !== "settled") return [];
      // Whole hours from the sales rollup (kept by triggers, drizzle/0006): a million rows summed in ~1 ms.
      const fast =
        !f.cid && !f.payer
          ? rollup.paymentTotals({ from: f.createdFrom, to: f.createdTo, instructionId: f.instructionId })
          : undefined;
      if (fast) return fast;
      const where = and(...filterConditions({ ...f, state: "settled" }));
      try {
        return db
          .select({
            network: payments.network,
            asset: payments.asset,
            amount: sql<string>`cast(sum(cast(${payments.amount} as integer)) as text)`,
            count: count(),
          })
          .from(payments)
          .where(where)
          .groupBy(payments.network, payments.asset)
          .orderBy(payments.network, payments.asset)
          .all();
      } catch {
        const totals = new Map<string, { network: string; asset: string; amount: bigint; count: number }>();
        for (const r of db
          .select({ network: payments.network, asset: payments.asset, amount: payments.amount })
          .from(payments)
          .where(where)
          // Read in the order of the sums' answer: the map keeps it.
          .orderBy(payments.network, payments.asset)
          .all()) {
          const k = `${r.network}|${r.asset}`;
          const t = totals.get(k) ?? { network: r.network, asset: r.asset, amount: 0n, count: 0 };
          t.amount += BigInt(r.amount);
          t.count += 1;
          totals.set(k, t);
        }
        return [...totals.values()].map((t) => ({ ...t, amount: t.amount.toString() }));
      }
    },
  };
}

/** The SQLite store, synchronous; the app holds `PaymentStore`, which a PostgreSQL store implements too. */
export type SqlitePaymentStore = ReturnType<typeof createPaymentStore>;
export type PaymentStore = Awaitable<SqlitePaymentStore>;
