/**
 * Bearer-token auth for the management API, as an Elysia macro:
 *
 *   new Elysia({ name, prefix }).use(auth(deps)).get("/x", handler, { scope: "read" })
 *
 * 401 (with `WWW-Authenticate: Bearer`) for a missing, malformed, wrongly
 * signed, expired or not-yet-valid token or another scheme; 403 for a valid
 * token without the scope. The check runs in `transform`, before validation,
 * so an anonymous caller learns nothing about what a valid body looks like.
 */
import { createHash } from "node:crypto";
import { type DocumentDecoration, Elysia } from "elysia";
import { ApiError } from "./errors";
import { checkToken, type Scope, type TokenJwt, tokenPlugin } from "./token";

export { createToken, type Scope } from "./token";

function unauthorized(message: string, error = "invalid_token") {
  return new ApiError(401, "unauthorized", message, undefined, {
    "www-authenticate": `Bearer realm="cidgate", error="${error}"`,
  });
}

/** Throws the 401/403 for a request that may not use `needed`; returns the token's scopes otherwise. */
async function authorize(
  authorization: string | null,
  jwt: TokenJwt,
  needed: Scope,
  revocations: RevocationCheck | undefined,
): Promise<Scope[]> {
  if (!authorization) {
    throw new ApiError(401, "unauthorized", "missing Authorization: Bearer <token>", undefined, {
      "www-authenticate": 'Bearer realm="cidgate"',
    });
  }
  const m = /^Bearer +(\S+) *$/i.exec(authorization);
  if (!m) throw unauthorized("the Authorization header must use the Bearer scheme", "invalid_request");
  // Bounded before any parsing; our tokens are ~300 characters.
  const token = m[1].length <= 4096 ? await checkToken(jwt, m[1]) : undefined;
  if (!token) throw unauthorized("the bearer token is invalid or expired");
  // Read on every request, so a revocation by any process (the CLI) counts from the next request on.
  const id = token.claims.jti;
  if (revocations && typeof id === "string" && (await revocations.isRevoked(id))) {
    throw unauthorized("the bearer token was revoked");
  }
  if (!token.scopes.includes(needed)) {
    throw new ApiError(403, "forbidden", `this token lacks the "${needed}" scope`, undefined, {
      "www-authenticate": `Bearer realm="cidgate", error="insufficient_scope", scope="${needed}"`,
    });
  }
  return token.scopes;
}

/**
 * OpenAPI: the route needs the bearer scheme (declared in openapi.ts). Cast
 * because elysia types `detail` from the optional `openapi-types` package.
 */
const bearerDetail = { security: [{ bearer: [] }] } as unknown as DocumentDecoration;

/** Whether a token id (`jti`) was revoked: tokens/store.ts. */
export interface RevocationCheck {
  isRevoked(id: string): boolean | Promise<boolean>;
}

/** What auth needs: the HS256 secret of management tokens, and where revocations are kept. */
export interface AuthDeps {
  jwtSecret: string;
  /** Absent (tests of one module): no token is ever revoked. */
  tokens?: RevocationCheck;
}

/** A number per revocation store, so apps over different databases never share one deduplicated plugin. */
const storeIds = new WeakMap<RevocationCheck, number>();
let lastStoreId = 0;

export function auth(deps: AuthDeps) {
  const secret = deps.jwtSecret;
  // Seeded by a fingerprint (never the secret itself) so two apps with different
  // secrets in one process (tests) do not share one deduplicated plugin.
  let storeId = 0;
  if (deps.tokens) {
    storeId = storeIds.get(deps.tokens) ?? ++lastStoreId;
    storeIds.set(deps.tokens, storeId);
  }
  const seed = `${createHash("sha256").update(secret).digest("hex").slice(0, 16)}:${storeId}`;
  return new Elysia({ name: "auth", seed }).use(tokenPlugin(secret)).macro({
    scope: (needed: Scope) => ({
      detail: bearerDetail,
      async transform({ request, jwt }) {
        await authorize(request.headers.get("authorization"), jwt, needed, deps.tokens);
      },
    }),
  });
}
