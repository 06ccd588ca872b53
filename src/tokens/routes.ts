/**
 * /v3/x402/tokens: the management tokens made with `cidgate token create`.
 * GET lists them (read scope), DELETE /:id revokes one (write scope): the
 * running server refuses it from the next request on. Tokens are made only
 * by the CLI (whoever holds the data folder's secret), never over the API.
 */
import { Elysia } from "elysia";
import { type AuthDeps, auth } from "../http/auth";
import { notFound } from "../http/errors";
import { ErrorResponse } from "../instructions/model";
import { revokeToken, tokenStatus } from "./issue";
import { TokenIdParams, TokenListResponse, TokenResponse, type TokenWire } from "./model";
import type { TokenRecord, TokenStore } from "./store";

export const TOKENS_PREFIX = "/v3/x402/tokens";

export function tokenToWire(t: TokenRecord, now = Date.now()): TokenWire {
  return {
    id: t.id,
    scopes: t.scopes,
    label: t.label,
    status: tokenStatus(t, now),
    created_at: t.createdAt,
    expires_at: t.expiresAt,
    revoked_at: t.revokedAt,
  };
}

export interface TokensDeps extends AuthDeps {
  tokens: TokenStore;
}

export function tokensModule(deps: TokensDeps) {
  const { tokens } = deps;
  return new Elysia({ name: "tokens", prefix: TOKENS_PREFIX })
    .use(auth(deps))
    .get("", async () => ({ data: { tokens: (await tokens.list()).map((t) => tokenToWire(t)) } }), {
      scope: "read",
      response: { 200: TokenListResponse, 401: ErrorResponse, 403: ErrorResponse },
      detail: { tags: ["tokens"], summary: "List management tokens (ids, scopes, expiry, revocation), newest first" },
    })
    .delete(
      "/:id",
      async ({ params }) => {
        // Ids only here: a whole token in a URL would end up in access logs.
        const revoked = params.id.includes(".") ? undefined : await revokeToken(deps.jwtSecret, tokens, params.id);
        if (!revoked) throw notFound("no token with this id");
        return { data: tokenToWire(revoked) };
      },
      {
        scope: "write",
        params: TokenIdParams,
        response: { 200: TokenResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse },
        detail: {
          tags: ["tokens"],
          summary: "Revoke a management token: refused from the next request on (idempotent)",
        },
      },
    );
}
