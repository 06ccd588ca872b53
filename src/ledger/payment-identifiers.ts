/**
 * The payment_identifiers table: idempotency keys from the x402
 * `payment-identifier` extension (x402/payment-identifier.ts reads them off a
 * payload). An id is remembered with the hash of the payload it first came
 * with; later the same id with the same hash is the same request, with
 * another hash a conflict. `attach` records which payment row the request
 * ended in, so a repeat can be answered with that payment's outcome.
 *
 * This store is the table's only writer. `remember` is one INSERT OR IGNORE
 * and a read: SQLite's primary key decides which of two racing requests
 * (in any process on the file) is "new".
 */
import type { Awaitable } from "../db/awaitable";
import type { Db } from "../db/client";
import type { paymentIdentifiers } from "../db/schema";

export type PaymentIdentifierRow = typeof paymentIdentifiers.$inferSelect;

export type RememberResult =
  /** First time this id is seen: process the request, then `attach` its payment. */
  | { kind: "new" }
  /** Seen with this very payload: `paymentId` is its payment once attached (null while the first is in flight, or when it ended without one). */
  | { kind: "same"; paymentId: number | null }
  /** Seen with another payload: the spec's 409. */
  | { kind: "conflict" };

/** The SQLite store, synchronous; the app holds `PaymentIdentifierStore`, which a PostgreSQL store implements too. */
export type PaymentIdentifierStore = Awaitable<SqlitePaymentIdentifierStore>;

export interface SqlitePaymentIdentifierStore {
  remember(id: string, payloadHash: string, nowIso: string): RememberResult;
  /** Records the payment the id's request ended in; a later attach replaces it. */
  attach(id: string, paymentId: number): void;
  /**
   * Forgets an id whose request was refused before any money moved (no
   * payment attached): the client may use it again with a corrected payment,
   * instead of a 409 for ever.
   */
  release(id: string, payloadHash: string): void;
  find(id: string): PaymentIdentifierRow | undefined;
}

export function createPaymentIdentifierStore(db: Db): SqlitePaymentIdentifierStore {
  // bun:sqlite statements, prepared once: the insert's `changes` is the answer (drizzle's
  // prepared run does not type it), and they cost less per call than the query builder.
  const insert = db.sqlite.query<never, [string, string, string]>(
    "INSERT INTO payment_identifiers (id, payload_hash, payment_id, created_at) VALUES (?, ?, NULL, ?) ON CONFLICT (id) DO NOTHING",
  );
  const find = db.sqlite.query<
    { id: string; payloadHash: string; paymentId: number | null; createdAt: string },
    [string]
  >(
    "SELECT id, payload_hash AS payloadHash, payment_id AS paymentId, created_at AS createdAt FROM payment_identifiers WHERE id = ?",
  );
  const attach = db.sqlite.query<never, [number, string]>("UPDATE payment_identifiers SET payment_id = ? WHERE id = ?");
  const release = db.sqlite.query<never, [string, string]>(
    "DELETE FROM payment_identifiers WHERE id = ? AND payload_hash = ? AND payment_id IS NULL",
  );

  return {
    remember(id, payloadHash, nowIso) {
      // Twice at most: a row deleted between the insert and the read (nothing here deletes) is inserted again.
      for (let attempt = 0; attempt < 2; attempt++) {
        if (insert.run(id, payloadHash, nowIso).changes === 1) return { kind: "new" };
        const row = find.get(id);
        if (!row) continue;
        return row.payloadHash === payloadHash ? { kind: "same", paymentId: row.paymentId } : { kind: "conflict" };
      }
      return { kind: "conflict" };
    },
    attach(id, paymentId) {
      attach.run(paymentId, id);
    },
    release(id, payloadHash) {
      release.run(id, payloadHash);
    },
    find(id) {
      return find.get(id) ?? undefined;
    },
  };
}
