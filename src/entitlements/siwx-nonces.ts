/**
 * The siwx_nonces table: sign-in-with-x nonces already used. It is what
 * makes a signed sign-in single-use across every process sharing the
 * database (a per-process set would let the same header in once per
 * process). This store is the table's only writer.
 *
 * `use` is one INSERT OR IGNORE: SQLite's primary key decides who was first,
 * so two requests racing with the same nonce cannot both win.
 */
import type { Db } from "../db/client";

export interface SiwxNonceStore {
  /** Marks `nonce` used at `nowSeconds`; true when this call was the first use, false when it was used already. */
  use(nonce: string, nowSeconds: number): boolean;
  /** Forgets nonces used before `beforeSeconds` (they can no longer verify anyway); how many. */
  prune(beforeSeconds: number): number;
}

export function createSiwxNonceStore(db: Db): SiwxNonceStore {
  // bun:sqlite statements, prepared once: they report `changes`, which is the answer here
  // (drizzle's prepared run does not type it), and cost less per call than the query builder.
  const insert = db.sqlite.query<never, [string, number]>(
    "INSERT INTO siwx_nonces (nonce, used_at) VALUES (?, ?) ON CONFLICT (nonce) DO NOTHING",
  );
  const prune = db.sqlite.query<never, [number]>("DELETE FROM siwx_nonces WHERE used_at < ?");
  return {
    use(nonce, nowSeconds) {
      return insert.run(nonce, Math.floor(nowSeconds)).changes === 1;
    },
    prune(beforeSeconds) {
      return prune.run(Math.floor(beforeSeconds)).changes;
    },
  };
}
