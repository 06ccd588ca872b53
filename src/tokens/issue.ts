/**
 * Making and revoking management tokens, without HTTP: the CLI (cli/token.ts)
 * and the routes (routes.ts) both come here. A token is an HS256 JWT
 * (http/token.ts); its `jti` is the id the table (store.ts) keys it by.
 */
import { randomUUID } from "node:crypto";
import { checkToken, createToken, type Scope, tokenPlugin } from "../http/token";
import type { TokenRecord, TokenStore } from "./store";

/** `--ttl` when none is given. */
export const DEFAULT_TOKEN_TTL = "30d";
/** The longest `--ttl`: one year. A token that should last longer is better made again (and revocable meanwhile). */
export const MAX_TOKEN_TTL_SECONDS = 366 * 86400;

export async function issueToken(
  secret: string,
  store: TokenStore,
  opts: { scopes: readonly Scope[]; ttlSeconds: number; label?: string },
): Promise<{ token: string; record: TokenRecord }> {
  const now = Math.floor(Date.now() / 1000);
  const id = randomUUID();
  const token = await createToken(secret, { scopes: opts.scopes, ttlSeconds: opts.ttlSeconds, now, id });
  const record: TokenRecord = {
    id,
    scopes: [...opts.scopes],
    label: opts.label ?? null,
    createdAt: new Date(now * 1000).toISOString(),
    expiresAt: new Date((now + opts.ttlSeconds) * 1000).toISOString(),
    revokedAt: null,
  };
  await store.record(record);
  return { token, record };
}

/** "active", "expired" or "revoked", at `now` (ms). */
export function tokenStatus(t: TokenRecord, now = Date.now()): "active" | "expired" | "revoked" {
  if (t.revokedAt) return "revoked";
  return Date.parse(t.expiresAt) <= now ? "expired" : "active";
}

/**
 * Revokes by id, or by the token itself (a JWT signed with `secret`): the way
 * to revoke a token made before ids were recorded. Undefined: no such token.
 */
export async function revokeToken(secret: string, store: TokenStore, idOrToken: string) {
  const at = new Date().toISOString();
  if (!idOrToken.includes(".")) return store.revoke(idOrToken, at);
  // A whole token: its signature must be ours (an expired one may still be revoked, for the record).
  const checked = await checkToken(tokenPlugin(secret).decorator.jwt, idOrToken, 0);
  const id = checked?.claims.jti;
  if (!checked || typeof id !== "string") return undefined;
  const iat = (checked.claims as { iat?: number }).iat;
  return store.revoke(id, at, {
    id,
    scopes: checked.scopes,
    label: null,
    createdAt: new Date((iat ?? checked.claims.exp) * 1000).toISOString(),
    expiresAt: new Date(checked.claims.exp * 1000).toISOString(),
  });
}
