/**
 * The entitlements table: who may download what without paying again. This
 * store is the table's only writer: the ledger's settler grants through
 * `grantForPayment` inside the transaction that marks a payment settled, the
 * management API and the CLI grant and revoke by hand, and the gateway asks
 * `active` on every credential that is not a fresh payment.
 *
 * Statements are prepared once per store (drizzle's builder costs 0.2-0.4 ms
 * a call, more than SQLite's work here). None of the writes opens a
 * transaction: one statement each, so each is atomic on its own, and
 * `grantForPayment` must join the caller's (a nested BEGIN would throw).
 *
 * Payers are stored EIP-55 checksummed and looked up by the checksummed form
 * of whatever spelling is asked, so the (payer, ...) indexes serve the hot
 * lookup; `lower(payer) = ?` would scan.
 */

import { and, desc, eq, isNull, sql } from "drizzle-orm";
import { checksumOrUndefined } from "../chain/address";
import type { Awaitable } from "../db/awaitable";
import type { Db } from "../db/client";
import { entitlements } from "../db/schema";
import type { EntitlementEvents } from "../notifications/hooks";
import { keysetPage, listWhere } from "./filter";
import { type AccessPolicy, type AccessScope, expiryOf } from "./policy";

export type Entitlement = typeof entitlements.$inferSelect;

export interface EntitlementFilter {
  payer?: string;
  cid?: string;
  instructionId?: string;
  /** true: only entitlements usable at `now`; false: only revoked or expired ones. Needs `now`. */
  active?: boolean;
  /** Unix seconds, for `active`. */
  now?: number;
}

export interface GrantForPaymentInput {
  payer: string;
  cid: string;
  instructionId: string;
  paymentId: number;
  policy: AccessPolicy;
  scope: AccessScope;
  nowSeconds: number;
}

export interface GrantInput {
  payer: string;
  /** Given: the entitlement covers this CID only; absent: every CID of the instruction. */
  cid?: string;
  instructionId: string;
  /** Unix seconds; null or absent = never. */
  expiresAt?: number | null;
  note?: string;
}

/** The checksummed spelling (memoised: EIP-55 costs a keccak), or undefined for anything but an address. */
const checksummed = checksumOrUndefined;

export const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

/** The row of a grant by hand, on either engine: scope "cid" when a CID is given, else "instruction". */
export function grantRow(input: GrantInput, payer: string, nowSeconds: number) {
  return {
    payer,
    scope: input.cid ? ("cid" as const) : ("instruction" as const),
    cid: input.cid ?? null,
    instructionId: input.instructionId,
    source: "grant" as const,
    paymentId: null,
    grantedAt: iso(nowSeconds),
    expiresAt: input.expiresAt ?? null,
    note: input.note ?? null,
  };
}

const ENTITLEMENT_COLUMNS = `id, payer, scope, cid, instruction_id AS instructionId, source, payment_id AS paymentId,
  granted_at AS grantedAt, expires_at AS expiresAt, revoked_at AS revokedAt, note`;
const SELECT_ENTITLEMENT = `SELECT ${ENTITLEMENT_COLUMNS} FROM entitlements`;

function prepareStatements(db: Db) {
  const p = sql.placeholder;
  return {
    // bun:sqlite directly, not drizzle: asked before every charge and on every re-download, and
    // drizzle's prepared select cost ~35 us here against ~5 us for the same SQL (issue 9 bench).
    // No ORDER BY: sorting made SQLite build a temporary B-tree for the one or two rows a payer
    // has, ~25 us of the ~30 a lookup cost; `longestLasting` picks the same row in JS (~3 us).
    // Two lookups, one per index ((payer, cid) and (payer, instruction_id)): with the two scopes
    // OR-ed in one WHERE, SQLite took the payer prefix of one index and read every entitlement of
    // the payer, 4.3 ms per request for a buyer with 20,000 of them, 1.7 us this way (bench/returning-buyer.ts).
    active: db.sqlite.query<Entitlement, [string, number, string, string]>(
      `${SELECT_ENTITLEMENT}
        WHERE payer = ?1 AND cid = ?3 AND scope = 'cid' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?2)
       UNION ALL
       ${SELECT_ENTITLEMENT}
        WHERE payer = ?1 AND instruction_id = ?4 AND scope = 'instruction' AND revoked_at IS NULL
          AND (expires_at IS NULL OR expires_at > ?2)`,
    ),
    byPayment: db.sqlite.query<Entitlement, [number]>(`${SELECT_ENTITLEMENT} WHERE payment_id = ?`),
    // Inside the settle transaction of every paid request: one raw statement, no read before it. A
    // second grant for the same payment (a retried settle, a recovery) keeps the first.
    insertForPayment: db.sqlite.query<
      Entitlement,
      [string, string, string | null, string, number, string, number | null]
    >(
      `INSERT INTO entitlements (payer, scope, cid, instruction_id, source, payment_id, granted_at, expires_at)
       VALUES (?, ?, ?, ?, 'payment', ?, ?, ?)
       ON CONFLICT (payment_id) DO NOTHING
       RETURNING ${ENTITLEMENT_COLUMNS}`,
    ),
    byId: db
      .select()
      .from(entitlements)
      .where(eq(entitlements.id, p("id")))
      .prepare(),
    insert: db
      .insert(entitlements)
      .values({
        payer: p("payer"),
        scope: p("scope"),
        cid: p("cid"),
        instructionId: p("instructionId"),
        source: p("source"),
        paymentId: p("paymentId"),
        grantedAt: p("grantedAt"),
        expiresAt: p("expiresAt"),
        revokedAt: null,
        note: p("note"),
      })
      .onConflictDoNothing({ target: entitlements.paymentId })
      .returning()
      .prepare(),
    revoke: db
      .update(entitlements)
      .set({ revokedAt: sql`${p("revokedAt")}` })
      .where(and(eq(entitlements.id, p("id")), isNull(entitlements.revokedAt)))
      .returning()
      .prepare(),
  };
}

/** The entitlements store of one database: the table's only writer. */
export function createEntitlementStore(db: Db, events?: EntitlementEvents) {
  const statements = prepareStatements(db);

  function get(id: number): Entitlement | undefined {
    return statements.byId.get({ id });
  }

  return {
    /**
     * The hot lookup: an entitlement of `payer` usable at `nowSeconds` that
     * covers `cid`, either for that CID or for the whole instruction.
     * Undefined when there is none or `payer` is not an address.
     */
    active(payer: string, cid: string, instructionId: string, nowSeconds: number): Entitlement | undefined {
      const who = checksummed(payer);
      if (!who) return undefined;
      return longestLasting(statements.active.all(who, nowSeconds, cid, instructionId));
    },

    /**
     * What a settled payment grants under its instruction's policy; undefined
     * (nothing written) for `once`. Synchronous and one statement at most, so
     * it runs inside the ledger's settle transaction on the same connection.
     * Idempotent per payment: a second call answers the row the first wrote.
     */
    grantForPayment(input: GrantForPaymentInput): Entitlement | undefined {
      const expiresAt = expiryOf(input.policy, input.nowSeconds);
      if (expiresAt === undefined) return undefined;
      const payer = checksummed(input.payer) ?? input.payer;
      const row = statements.insertForPayment.get(
        payer,
        input.scope,
        input.scope === "cid" ? input.cid : null,
        input.instructionId,
        input.paymentId,
        iso(input.nowSeconds),
        expiresAt,
      );
      // In the settle transaction, like the row: synchronous here (the SQLite notifications store).
      if (row) void events?.granted(row);
      return row ?? statements.byPayment.get(input.paymentId) ?? undefined;
    },

    /** A grant by hand (a gift, a refund made good): scope "cid" when a CID is given, else "instruction". */
    grant(input: GrantInput, nowSeconds: number): Entitlement {
      const payer = checksummed(input.payer);
      if (!payer) throw new Error(`not an address: ${input.payer}`);
      // The row and its webhook event together (bun:sqlite nests a transaction as a savepoint).
      return db.sqlite.transaction(() => {
        const row = statements.insert.get(grantRow(input, payer, nowSeconds))!;
        void events?.granted(row); // synchronous on SQLite, as above
        return row;
      })();
    },

    /** Revokes; a second revoke keeps the first time. Undefined for an unknown id. */
    revoke(id: number, nowSeconds: number): Entitlement | undefined {
      return db.sqlite.transaction(() => {
        const revoked = statements.revoke.get({ id, revokedAt: iso(nowSeconds) });
        if (revoked) void events?.revoked(revoked); // the first revoke only; synchronous on SQLite
        return revoked ?? get(id);
      })();
    },

    get,

    /** One page, newest first, keyed by row id (keyset paging: stable while rows are added). */
    list(filter: EntitlementFilter, page: { limit: number; afterId?: number }) {
      const rows = db
        .select()
        .from(entitlements)
        .where(listWhere(entitlements, filter, page.afterId))
        .orderBy(desc(entitlements.id))
        .limit(page.limit + 1)
        .all();
      return keysetPage(rows, page.limit);
    },
  };
}

/** The SQLite store, synchronous; the app holds `EntitlementStore`, which a PostgreSQL store implements too. */
export type SqliteEntitlementStore = ReturnType<typeof createEntitlementStore>;
export type EntitlementStore = Awaitable<SqliteEntitlementStore>;

/**
 * The entitlement that lasts longest (what a token's lifetime is capped by):
 * one that never expires first, then the latest expiry, then the newest row;
 * as `ORDER BY expires_at IS NULL DESC, expires_at DESC, id DESC LIMIT 1`.
 */
export function longestLasting(rows: readonly Entitlement[]): Entitlement | undefined {
  let best: Entitlement | undefined;
  for (const row of rows) if (!best || lastsLonger(row, best)) best = row;
  return best;
}

function lastsLonger(a: Entitlement, b: Entitlement): boolean {
  if (a.expiresAt !== b.expiresAt) return a.expiresAt === null || (b.expiresAt !== null && a.expiresAt > b.expiresAt);
  return a.id > b.id;
}

/** Whether `e` is usable at `nowSeconds` (for answers; queries filter in SQL). */
export function isActive(e: Entitlement, nowSeconds: number): boolean {
  return e.revokedAt === null && (e.expiresAt === null || e.expiresAt > nowSeconds);
}
