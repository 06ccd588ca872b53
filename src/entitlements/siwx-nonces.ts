/**
 * The siwx_nonces table: sign-in-with-x nonces already used. It is what
 * makes a signed sign-in single-use across every process sharing the
 * database (a per-process set would let the same header in once per
 * process, or again after a restart). This store is the table's only writer.
 *
 * `use` is one INSERT OR IGNORE: SQLite's primary key decides who was first,
 * so two requests racing with the same nonce cannot both win.
 *
 * `useSoon` is the same INSERT, committed together with the other sign-ins
 * that arrive in the same turn of the event loop (a group commit): each
 * answer is still the INSERT's own `changes`, given only after the
 * transaction committed, so nothing is served on a nonce the database has not
 * recorded. One commit per sign-in cost ~24 us of system time (the WAL write
 * and its locks), most of an INSERT's ~32 us; under load many sign-ins share
 * one. A batch the database refuses rejects every caller in it, and nothing
 * of it was recorded (nor served).
 */
import type { Awaitable } from "../db/awaitable";
import type { Db } from "../db/client";
import { turnBatcher } from "./turn-batch";

/** The SQLite store, synchronous; the app holds `SiwxNonceStore`, which a PostgreSQL store implements too. */
export type SiwxNonceStore = Awaitable<SqliteSiwxNonceStore>;

export interface SqliteSiwxNonceStore {
  /** Marks `nonce` used at `nowSeconds`; true when this call was the first use, false when it was used already. */
  use(nonce: string, nowSeconds: number): boolean;
  /** `use`, committed with the other calls of this event-loop turn; rejects when the batch could not be written. */
  useSoon(nonce: string, nowSeconds: number): Promise<boolean>;
  /** Forgets nonces used before `beforeSeconds` (they can no longer verify anyway); how many. */
  prune(beforeSeconds: number): number;
}

/** A bound on one batch's transaction: the rest waits for the next turn. */
export const MAX_BATCH = 512;

export function createSiwxNonceStore(db: Db): SqliteSiwxNonceStore {
  // bun:sqlite statements, prepared once: they report `changes`, which is the answer here
  // (drizzle's prepared run does not type it), and cost less per call than the query builder.
  const insert = db.sqlite.query<never, [string, number]>(
    "INSERT INTO siwx_nonces (nonce, used_at) VALUES (?, ?) ON CONFLICT (nonce) DO NOTHING",
  );
  const prune = db.sqlite.query<never, [number]>("DELETE FROM siwx_nonces WHERE used_at < ?");
  const use = (nonce: string, nowSeconds: number) => insert.run(nonce, Math.floor(nowSeconds)).changes === 1;

  const writeBatch = db.sqlite.transaction((batch: { nonce: string; at: number }[]) =>
    batch.map((w) => use(w.nonce, w.at)),
  );
  const soon = turnBatcher(writeBatch, MAX_BATCH);

  return {
    use,
    useSoon: (nonce, nowSeconds) => soon({ nonce, at: nowSeconds }),
    prune(beforeSeconds) {
      return prune.run(Math.floor(beforeSeconds)).changes;
    },
  };
}
