/** A management_tokens row as either engine's raw SQL reads it (`SELECT *`), and the record the store answers. */
import type { TokenRecord } from "./store";

export interface TokenRow {
  id: string;
  scopes: string;
  label: string | null;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
}

export const toRecord = (r: TokenRow): TokenRecord => ({
  id: r.id,
  scopes: r.scopes.split(" ").filter(Boolean),
  label: r.label,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
});

/** The scopes as the table keeps them: space-separated, as in the token's `scope` claim. */
export const scopesText = (scopes: readonly string[]) => scopes.join(" ");
