/**
 * Wire shapes of /v3/x402/tokens, declared once (TypeBox): Elysia validates
 * with them, OpenAPI documents them, types derive. The token itself never
 * appears: only its id and what it allows.
 */
import { type Static, Type as T } from "@sinclair/typebox";

export const TokenWire = T.Object({
  id: T.String({ description: "the token's id (its JWT `jti`)" }),
  scopes: T.Array(T.String(), { description: "read, write" }),
  label: T.Union([T.String(), T.Null()], { description: "what `--label` said at creation" }),
  status: T.Union([T.Literal("active"), T.Literal("expired"), T.Literal("revoked")]),
  created_at: T.String({ format: "date-time" }),
  expires_at: T.String({ format: "date-time" }),
  revoked_at: T.Union([T.String({ format: "date-time" }), T.Null()]),
});
export type TokenWire = Static<typeof TokenWire>;

export const TokenListResponse = T.Object({ data: T.Object({ tokens: T.Array(TokenWire) }) });
export const TokenResponse = T.Object({ data: TokenWire });
export const TokenIdParams = T.Object({ id: T.String({ description: "a token id from the list" }) });
