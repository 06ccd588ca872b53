/**
 * The management_tokens table on PostgreSQL: the same store as store.ts (see
 * there), answering with promises. `isRevoked` is one primary-key read per
 * management request, with no cache: a token revoked through any replica
 * (or the CLI) is refused by every replica from its next request on.
 */
import { sql } from "drizzle-orm";
import type { Async } from "../db/awaitable";
import type { Pg } from "../db/pg";
import { type TokenRow as Row, scopesText, toRecord } from "./record";
import type { SqliteTokenStore, TokenRecord } from "./store";

export type PgTokenStore = Async<SqliteTokenStore>;

export function createPgTokenStore(pg: Pg): PgTokenStore {
  // Raw SQL, as on SQLite: text columns only, so Bun's rows are the table's values as they are.
  const rows = async (query: ReturnType<typeof sql>) => (await pg.q().execute(query)) as unknown as Row[];
  const insert = (t: Omit<TokenRecord, "revokedAt">, revokedAt: string | null) =>
    pg.q().execute(
      sql`INSERT INTO management_tokens (id, scopes, label, created_at, expires_at, revoked_at)
          VALUES (${t.id}, ${scopesText(t.scopes)}, ${t.label}, ${t.createdAt}, ${t.expiresAt}, ${revokedAt})
          ON CONFLICT (id) DO NOTHING`,
    );
  const get = async (id: string) => {
    const [row] = await rows(sql`SELECT * FROM management_tokens WHERE id = ${id}`);
    return row ? toRecord(row) : undefined;
  };
  return {
    async record(t) {
      await insert(t, null);
    },
    async list(limit = 1000) {
      return (await rows(sql`SELECT * FROM management_tokens ORDER BY created_at DESC, id DESC LIMIT ${limit}`)).map(
        toRecord,
      );
    },
    get,
    revoke(id, at, unrecorded) {
      return pg.transaction(async () => {
        if (unrecorded && unrecorded.id === id) await insert(unrecorded, at);
        await pg
          .q()
          .execute(sql`UPDATE management_tokens SET revoked_at = ${at} WHERE id = ${id} AND revoked_at IS NULL`);
        return get(id);
      });
    },
    async isRevoked(id) {
      const found = await rows(sql`SELECT 1 AS r FROM management_tokens WHERE id = ${id} AND revoked_at IS NOT NULL`);
      return found.length > 0;
    },
  };
}
