/**
 * Access tokens: what a browser (as a cookie) or a resumed download (as a
 * bearer token) presents instead of paying again. A token is an HS256 JWT
 * made and checked by `@elysiajs/jwt` (jose), bound to (payer, CID), and
 * never stored: each use still asks the entitlements whether access is
 * active, so a revocation takes effect at once.
 *
 * The key is derived from the management secret under a label of its own, so
 * an access token is never a management token, nor the other way round.
 */
import { createHmac } from "node:crypto";
import { jwt } from "@elysiajs/jwt";
import { t } from "elysia";

const AccessClaims = t.Object({ sub: t.String(), cid: t.String() });

/** The cookie a paid or entitled response sets, scoped to the CID's own path. */
export const ACCESS_COOKIE = "cidgate_access";
/** The same token as a response header, for scripts: sent back as `Authorization: Bearer <token>`. */
export const ACCESS_TOKEN_HEADER = "X-Access-Token";

const VERIFY = { algorithms: ["HS256"], requiredClaims: ["exp"], typ: "JWT" };

export interface AccessTokenClaims {
  payer: `0x${string}`;
  cid: string;
  exp: number;
}

export function createAccessTokens(options: { managementSecret: string }) {
  const secret = createHmac("sha256", options.managementSecret).update("cidgate access token v1").digest("base64url");
  const signer = jwt({ name: "jwt", secret, alg: "HS256", typ: "JWT", schema: AccessClaims }).decorator.jwt;

  return {
    /** A token for `payer` and `cid`, valid until `exp` (unix seconds). */
    sign(claims: AccessTokenClaims): Promise<string> {
      return signer.sign({ sub: claims.payer, cid: claims.cid, exp: claims.exp });
    },
    /** The claims of an authentic, current token for this CID; undefined for anything else. */
    async verify(token: string, cid: string, nowSeconds?: number): Promise<AccessTokenClaims | undefined> {
      if (token.length > 2048) return undefined;
      const claims = await signer.verify(
        token,
        nowSeconds === undefined ? VERIFY : { ...VERIFY, currentDate: new Date(nowSeconds * 1000) },
      );
      if (!claims || claims.cid !== cid || !/^0x[0-9a-fA-F]{40}$/.test(claims.sub)) return undefined;
      return { payer: claims.sub as `0x${string}`, cid: claims.cid, exp: claims.exp as number };
    },
  };
}

export type AccessTokens = ReturnType<typeof createAccessTokens>;
