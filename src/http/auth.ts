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
import type { AppDeps } from "../app";
import { ApiError } from "./errors";
import { type Scope, verifyToken } from "./token";

export { createToken, parseScopes, type Scope, SCOPES, verifyToken } from "./token";

const REASONS = {
  malformed: "the bearer token is malformed",
  algorithm: "the bearer token must be signed with HS256",
  signature: "the bearer token signature is invalid",
  expired: "the bearer token has expired",
  not_yet_valid: "the bearer token is not valid yet",
} as const;

function unauthorized(message: string, error = "invalid_token") {
  return new ApiError(401, "unauthorized", message, undefined, {
    "www-authenticate": `Bearer realm="cidgate", error="${error}"`,
  });
}

/** Throws the 401/403 for a request that may not use `needed`; returns the token's scopes otherwise. */
export function authorize(authorization: string | null, secret: string, needed: Scope): Scope[] {
  if (!authorization) {
    throw new ApiError(401, "unauthorized", "missing Authorization: Bearer <token>", undefined, {
      "www-authenticate": 'Bearer realm="cidgate"',
    });
  }
  const m = /^Bearer +(\S+) *$/i.exec(authorization);
  if (!m) throw unauthorized("the Authorization header must use the Bearer scheme", "invalid_request");
  const result = verifyToken(m[1], secret);
  if (!result.ok) throw unauthorized(REASONS[result.reason]);
  if (!result.scopes.includes(needed)) {
    throw new ApiError(403, "forbidden", `this token lacks the "${needed}" scope`, undefined, {
      "www-authenticate": `Bearer realm="cidgate", error="insufficient_scope", scope="${needed}"`,
    });
  }
  return result.scopes;
}

/**
 * OpenAPI: the route needs the bearer scheme (declared in openapi.ts). Cast
 * because elysia types `detail` from the optional `openapi-types` package.
 */
const bearerDetail = { security: [{ bearer: [] }] } as unknown as DocumentDecoration;

export function auth(deps: Pick<AppDeps, "jwtSecret">) {
  const secret = deps.jwtSecret;
  // Seeded by a fingerprint (never the secret itself) so two apps with different
  // secrets in one process (tests) do not share one deduplicated plugin.
  const seed = createHash("sha256").update(secret).digest("hex").slice(0, 16);
  return new Elysia({ name: "auth", seed }).macro({
    scope: (needed: Scope) => ({
      detail: bearerDetail,
      transform({ request }) {
        authorize(request.headers.get("authorization"), secret, needed);
      },
    }),
  });
}
