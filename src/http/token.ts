/**
 * Management tokens: HS256 JWTs made and checked by `@elysiajs/jwt` (jose).
 *
 * One plugin instance per secret does both: the auth macro reads its `jwt`
 * decorator from the request context, the CLI and tests call the same
 * decorator through `tokenPlugin(secret).decorator.jwt`. Nothing here knows
 * about HTTP.
 */
import { randomUUID } from "node:crypto";
import { jwt } from "@elysiajs/jwt";
import { t } from "elysia";

export const SCOPES = ["read", "write"] as const;
export type Scope = (typeof SCOPES)[number];

/** Checked on every verified payload: the scopes, space-separated as in OAuth 2.0 (`"read write"`). */
const TokenClaims = t.Object({ scope: t.String() });

export function tokenPlugin(secret: string) {
  return jwt({ name: "jwt", secret, alg: "HS256", typ: "JWT", schema: TokenClaims });
}

/** The `jwt` decorator of `tokenPlugin`: `sign(claims)` and `verify(token, options)`. */
export type TokenJwt = ReturnType<typeof tokenPlugin>["decorator"]["jwt"];

/**
 * Passed to jose's `jwtVerify`: HS256 only (so `alg: none`, HS512, RS256 key
 * confusion... are refused before the signature is even computed), and every
 * token must expire. jose itself refuses bad signatures, `exp` in the past,
 * `nbf` in the future and unknown `crit` extensions.
 */
const VERIFY = { algorithms: ["HS256"], requiredClaims: ["exp"], typ: "JWT" };

/** Parses `"read,write"` or `"read write"` into known scopes; undefined if any is unknown or none given. */
export function parseScopes(text: string): Scope[] | undefined {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (parts.length === 0) return undefined;
  if (!parts.every((p): p is Scope => (SCOPES as readonly string[]).includes(p))) return undefined;
  return SCOPES.filter((s) => parts.includes(s));
}

/**
 * The claims and scopes of an authentic, current token; undefined for any
 * rejection (jose does not say why). `now` (unix seconds) is for tests.
 */
export async function checkToken(jwt: TokenJwt, token: string, now?: number) {
  const claims = await jwt.verify(token, now === undefined ? VERIFY : { ...VERIFY, currentDate: new Date(now * 1000) });
  if (!claims) return undefined;
  // Unknown scope names are ignored rather than fatal, so a newer token still works for what we know.
  const scopes = SCOPES.filter((s) => claims.scope.split(" ").includes(s));
  return { claims: claims as typeof claims & { exp: number; jti?: string }, scopes };
}

/**
 * Signs a management token valid from now for `ttlSeconds`.
 * `now` and `notBefore` (unix seconds) are for tests.
 */
export function createToken(
  secret: string,
  opts: {
    scopes: readonly Scope[];
    ttlSeconds: number;
    now?: number;
    notBefore?: number;
    subject?: string;
    /** The token's id (`jti`), as recorded by tokens/store.ts; default a fresh UUID. */
    id?: string;
  },
): Promise<string> {
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  return tokenPlugin(secret).decorator.jwt.sign({
    sub: opts.subject ?? "cidgate",
    scope: opts.scopes.join(" "),
    jti: opts.id ?? randomUUID(),
    exp: now + opts.ttlSeconds,
    ...(opts.notBefore !== undefined && { nbf: opts.notBefore }),
  });
}
