/**
 * Access tokens: what a browser (as a cookie) or a resumed download (as a
 * bearer token) presents instead of paying again. A token is an HS256 JWT
 * bound to (payer, CID), and never stored: each use still asks the
 * entitlements whether access is active, so a revocation takes effect at once.
 *
 * The key is derived from the management secret under a label of its own, so
 * an access token is never a management token, nor the other way round.
 *
 * Made and checked here with one node:crypto HMAC-SHA256 each (~5 us), not
 * through jose (`@elysiajs/jwt`, as management tokens are): jose imports the
 * key into WebCrypto and clones the claims on every call, ~55 us a signature
 * warm, ~0.35 ms cold on the paid path, and ~90 us a check. The tokens are
 * the same bytes jose writes for the same claims (header
 * `{"alg":"HS256","typ":"JWT"}`, claims `sub`, `cid`, `exp`, `iat`): a test
 * checks that jose verifies ours, that ours verifies jose's (tokens issued
 * before this change stay good), and that both refuse a tampered one.
 *
 * The check is narrower than a general JWT verifier, on purpose: only the one
 * header this signer writes is accepted (no `alg` to negotiate: `none` and
 * every other algorithm are refused by bytes), the signature is compared in
 * constant time as its canonical base64url text, and `exp` must be a number
 * after now (jose's rule: expired at `exp`).
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** The cookie a paid or entitled response sets, scoped to the CID's own path. */
export const ACCESS_COOKIE = "cidgate_access";
/** The same token as a response header, for scripts: sent back as `Authorization: Bearer <token>`. */
export const ACCESS_TOKEN_HEADER = "X-Access-Token";

/** base64url of `{"alg":"HS256","typ":"JWT"}`, as jose serializes the header `@elysiajs/jwt` sets. */
const HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");
const MAX_TOKEN_LENGTH = 2048;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export interface AccessTokenClaims {
  payer: `0x${string}`;
  cid: string;
  exp: number;
}

/** Derives the access-token key from the management secret (the same derivation since issue 9). */
export function accessTokenKey(managementSecret: string): string {
  return createHmac("sha256", managementSecret).update("cidgate access token v1").digest("base64url");
}

export function createAccessTokens(options: { managementSecret: string; now?: () => number }) {
  // The derived key's base64url text is the HMAC key (as its UTF-8 bytes), as jose was given it.
  const key = Buffer.from(accessTokenKey(options.managementSecret), "utf8");
  const clock = options.now ?? (() => Math.floor(Date.now() / 1000));
  const mac = (input: string) => createHmac("sha256", key).update(input).digest("base64url");

  return {
    /** A token for `payer` and `cid`, valid until `exp` (unix seconds); `iat` is now. */
    sign(claims: AccessTokenClaims, issuedAt: number = clock()): string {
      const payload = Buffer.from(
        JSON.stringify({ sub: claims.payer, cid: claims.cid, exp: claims.exp, iat: issuedAt }),
      ).toString("base64url");
      const input = `${HEADER}.${payload}`;
      return `${input}.${mac(input)}`;
    },

    /** The claims of an authentic, current token for this CID; undefined for anything else. */
    verify(token: string, cid: string, nowSeconds: number = clock()): AccessTokenClaims | undefined {
      if (token.length > MAX_TOKEN_LENGTH || !token.startsWith(`${HEADER}.`)) return undefined;
      const signatureAt = token.lastIndexOf(".");
      if (signatureAt <= HEADER.length) return undefined;
      const input = token.slice(0, signatureAt);
      if (input.indexOf(".", HEADER.length + 1) !== -1) return undefined; // exactly three parts
      const given = Buffer.from(token.slice(signatureAt + 1), "latin1");
      const expected = Buffer.from(mac(input), "latin1");
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      let claims: unknown;
      try {
        claims = JSON.parse(Buffer.from(input.slice(HEADER.length + 1), "base64url").toString("utf8"));
      } catch {
        return undefined;
      }
      if (typeof claims !== "object" || claims === null) return undefined;
      const { sub, cid: tokenCid, exp } = claims as Record<string, unknown>;
      if (typeof exp !== "number" || !Number.isFinite(exp) || exp <= nowSeconds) return undefined;
      if (tokenCid !== cid || typeof sub !== "string" || !ADDRESS.test(sub)) return undefined;
      return { payer: sub as `0x${string}`, cid, exp };
    },
  };
}

export type AccessTokens = ReturnType<typeof createAccessTokens>;
