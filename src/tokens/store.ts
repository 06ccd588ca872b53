/**
 * The management_tokens table: one row per management token made by
 * `cidgate token create`, keyed by the JWT's `jti` (the token itself is never
 * stored). This store is the table's only writer.
 *
 * Revocation works across processes: the CLI may revoke while a server runs
 * on the same file. `isRevoked` is one primary-key read per management
 * request (a few microseconds; the management API is not the hot path), and
 * every read sees the last commit of any process (WAL), so a revoked token is
 * refused from the next request on, with no cache to go stale.
 */
import type { Awaitable } from "../db/awaitable";
import type { Db } from "../db/client";
import { type TokenRow as Row, scopesText, toRecord } from "./record";

export interface TokenRecord {
  id: string;
  scopes: string[];
  label: string | null;
  createdAt: string;
  expiresAt: string;
  revokedAt: string | null;
}

/** The SQLite store, synchronous; the app holds `TokenStore`, which a PostgreSQL store implements too. */
export type TokenStore = Awaitable<SqliteTokenStore>;

export interface SqliteTokenStore {
  /** Records a token just signed. */
  record(token: Omit<TokenRecord, "revokedAt">): void;
  /** Newest first; expired ones too (they say so), up to `limit`. */
  list(limit?: number): TokenRecord[];
  get(id: string): TokenRecord | undefined;
  /**
   * Revokes `id` at `at`. A token without a row (made before rows were kept)
   * gets one from `unrecorded`, so revoking works for it too. The first
   * revocation time stays; undefined when there is no such token.
   */
  revoke(id: string, at: string, unrecorded?: Omit<TokenRecord, "revokedAt">): TokenRecord | undefined;
  isRevoked(id: string): boolean;
}

export function createTokenStore(db: Db): SqliteTokenStore {
  const sqlite = db.sqlite;
  const insert = sqlite.query<never, [string, string, string | null, string, string, string | null]>(
    `INSERT INTO management_tokens (id, scopes, label, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO NOTHING`,
  );
  const list = sqlite.query<Row, [number]>("SELECT * FROM management_tokens ORDER BY created_at DESC, id DESC LIMIT ?");
  const get = sqlite.query<Row, [string]>("SELECT * FROM management_tokens WHERE id = ?");
  const revoke = sqlite.query<never, [string, string]>(
    "UPDATE management_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
  );
  const revoked = sqlite.query<{ r: number }, [string]>(
    "SELECT 1 AS r FROM management_tokens WHERE id = ? AND revoked_at IS NOT NULL",
  );
  return {
    record(t) {
      insert.run(t.id, scopesText(t.scopes), t.label, t.createdAt, t.expiresAt, null);
    },
    list(limit = 1000) {
      return list.all(limit).map(toRecord);
    },
    get(id) {
      const row = get.get(id);
      return row ? toRecord(row) : undefined;
    },
    revoke(id, at, unrecorded) {
      return sqlite.transaction(() => {
        if (unrecorded && unrecorded.id === id) {
          insert.run(
            id,
            scopesText(unrecorded.scopes),
            unrecorded.label,
            unrecorded.createdAt,
            unrecorded.expiresAt,
            at,
          );
        }
        revoke.run(at, id);
        const row = get.get(id);
        return row ? toRecord(row) : undefined;
      })();
    },
    isRevoked(id) {
      return revoked.get(id) !== null;
    },
  };
}
