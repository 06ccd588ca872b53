/**
 * Management tokens: compact JWS, HS256 only, checked by hand.
 *
 * Why by hand: the whole rule set is a dozen lines (one algorithm, one key),
 * and writing it out makes every rejection explicit — `alg: none`, any other
 * algorithm, a bad signature, expiry, not-before — and the signature compare
 * visibly constant-time (`timingSafeEqual`). Nothing here knows about HTTP.
 */
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";

export const SCOPES = ["read", "write"] as const;
export type Scope = (typeof SCOPES)[number];

export interface TokenClaims {
  /** Space-separated scopes, as in OAuth 2.0 (`"read write"`). */
  scope: string;
  /** Unix seconds. Required: every token expires. */
  exp: number;
  iat?: number;
  nbf?: number;
  jti?: string;
  sub?: string;
}

export type VerifyResult =
  | { ok: true; claims: TokenClaims; scopes: Scope[] }
  | { ok: false; reason: "malformed" | "algorithm" | "signature" | "expired" | "not_yet_valid" };

const B64URL = /^[A-Za-z0-9_-]+$/;

function b64url(data: string | Buffer): string {
  return Buffer.from(data).toString("base64url");
}

function hmac(secret: string, input: string): Buffer {
  return createHmac("sha256", secret).update(input).digest();
}

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Parses `"read,write"` or `"read write"` into known scopes; undefined if any is unknown or none given. */
export function parseScopes(text: string): Scope[] | undefined {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (parts.length === 0) return undefined;
  if (!parts.every((p): p is Scope => (SCOPES as readonly string[]).includes(p))) return undefined;
  return SCOPES.filter((s) => parts.includes(s));
}

/**
 * Signs a management token valid from now for `ttlSeconds`.
 * `now` (unix seconds) is for tests.
 */
export function createToken(
  secret: string,
  opts: { scopes: readonly Scope[]; ttlSeconds: number; now?: number; notBefore?: number; subject?: string },
): string {
  const iat = opts.now ?? Math.floor(Date.now() / 1000);
  const claims: TokenClaims = {
    sub: opts.subject ?? "cidgate",
    scope: opts.scopes.join(" "),
    iat,
    exp: iat + opts.ttlSeconds,
    jti: randomUUID(),
  };
  if (opts.notBefore !== undefined) claims.nbf = opts.notBefore;
  const head = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
  const body = b64url(JSON.stringify(claims));
  return `${head}.${body}.${hmac(secret, `${head}.${body}`).toString("base64url")}`;
}

/**
 * Checks a compact JWS: HS256 only, signature first (nothing in the payload is
 * read before it is authentic), then `exp` (required) and `nbf`.
 */
export function verifyToken(token: string, secret: string, now = Math.floor(Date.now() / 1000)): VerifyResult {
  const parts = token.split(".");
  if (parts.length !== 3 || token.length > 4096) return { ok: false, reason: "malformed" };
  const [head, body, sig] = parts;
  if (!B64URL.test(head) || !B64URL.test(body)) return { ok: false, reason: "malformed" };
  const header = decodeJson(head);
  if (!header) return { ok: false, reason: "malformed" };
  // Only HS256; "none", RS256 (key confusion), HS512... are all refused. `crit`
  // would ask us to understand extensions we do not implement.
  if (header.alg !== "HS256" || "crit" in header) return { ok: false, reason: "algorithm" };
  if (header.typ !== undefined && header.typ !== "JWT") return { ok: false, reason: "malformed" };
  if (!B64URL.test(sig)) return { ok: false, reason: "signature" };
  const given = Buffer.from(sig, "base64url");
  const expected = hmac(secret, `${head}.${body}`);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: "signature" };

  const claims = decodeJson(body);
  if (!claims) return { ok: false, reason: "malformed" };
  const { exp, nbf, scope } = claims;
  if (typeof exp !== "number" || !Number.isFinite(exp)) return { ok: false, reason: "malformed" };
  if (nbf !== undefined && (typeof nbf !== "number" || !Number.isFinite(nbf))) return { ok: false, reason: "malformed" };
  if (typeof scope !== "string") return { ok: false, reason: "malformed" };
  if (now >= exp) return { ok: false, reason: "expired" };
  if (nbf !== undefined && now < nbf) return { ok: false, reason: "not_yet_valid" };
  // Unknown scope names are ignored rather than fatal, so a newer token still works for what we know.
  const scopes = SCOPES.filter((s) => scope.split(" ").includes(s));
  return { ok: true, claims: claims as unknown as TokenClaims, scopes };
}

/** Parses a TTL like `30d`, `12h`, `15m`, `90s` or a bare number of seconds. */
export function parseTtl(text: string): number | undefined {
  const m = /^(\d+)\s*([smhdw]?)$/.exec(text.trim());
  if (!m) return undefined;
  const unit = { "": 1, s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[m[2] as "" | "s" | "m" | "h" | "d" | "w"];
  const seconds = Number(m[1]) * unit;
  return seconds > 0 && seconds <= 10 * 366 * 86400 ? seconds : undefined;
}
