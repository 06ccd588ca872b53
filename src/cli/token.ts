/**
 * `cidgate token create|list|revoke`: management tokens for the API, signed
 * with the server's secret (JWT_SECRET, or the one generated into the data
 * folder) and recorded by id in CIDGATE_DB, so one can be listed and revoked
 * without rotating the secret. A running server refuses a revoked token from
 * its next request on (it reads the table on every management request).
 * `create` prints only the token on stdout, so it can be captured:
 *   TOKEN=$(npx cidgate token create --scope read)
 */

import { parseTtl } from "../duration";
import { grid } from "../grid";
import { jwtSecretPath, resolveJwtSecret, sharedSecretMissing } from "../http/jwt-secret";
import { parseScopes } from "../http/token";
import { loadSettings } from "../settings";
import { DEFAULT_TOKEN_TTL, issueToken, MAX_TOKEN_TTL_SECONDS, revokeToken, tokenStatus } from "../tokens/issue";
import { defineCommand, defineGroup, UsageError } from "./command";
import { withStores } from "./with-stores";

/**
 * With PostgreSQL a token is checked by every replica: signed with JWT_SECRET, never with a secret
 * generated on this machine (jwt-secret.ts). True after one line when JWT_SECRET is missing, before
 * the database is opened (a bad setting is left to withStores to report).
 */
function refusesUnsharedSecret(who: string): boolean {
  let missing: string | undefined;
  try {
    missing = sharedSecretMissing(loadSettings());
  } catch {
    return false;
  }
  if (missing) console.error(`${who}: ${missing}`);
  return missing !== undefined;
}

const create = defineCommand({
  name: "token create",
  summary: "print a management token for the API (only the token on stdout)",
  options: {
    scope: {
      type: "string",
      value: "<scopes>",
      description: "read (GETs), write (the rest) or both as one list, read,write; default read,write",
    },
    ttl: {
      type: "string",
      value: "<time>",
      description: `lifetime with its unit: 90s, 15m, 12h, 30d, 2w; default ${DEFAULT_TOKEN_TTL}, at most 366d`,
    },
    label: { type: "string", value: "<text>", description: "what the token is for, shown by token list" },
  },
  notes:
    "Signed with JWT_SECRET, or with the secret generated once into the data folder; recorded by id in CIDGATE_DB.",
  async run({ values, who }) {
    const scopeText = values.scope ?? "read,write";
    const scopes = parseScopes(scopeText);
    if (!scopes) throw new UsageError(`--scope must be read, write or read,write (got "${scopeText}")`);
    const ttlText = values.ttl ?? DEFAULT_TOKEN_TTL;
    const ttlSeconds = parseTtl(ttlText);
    if (ttlSeconds === undefined || ttlSeconds > MAX_TOKEN_TTL_SECONDS) {
      throw new UsageError(
        /^\s*\d+\s*$/.test(ttlText)
          ? `--ttl needs a unit: s, m, h, d or w, as in ${ttlText.trim()}s or ${ttlText.trim()}d (got "${ttlText}")`
          : `--ttl must look like 90s, 15m, 12h, 30d or 2w, at most 366d (got "${ttlText}")`,
      );
    }
    const label = values.label?.trim();
    if (label !== undefined && label.length > 200) throw new UsageError("--label is at most 200 characters");

    if (refusesUnsharedSecret(who)) return 2;
    return withStores(
      who,
      async ({ tokens }, { settings }) => {
        const secret = resolveJwtSecret(settings);
        const { token, record } = await issueToken(secret, tokens, { scopes, ttlSeconds, label });
        const from = settings.jwtSecret !== undefined ? "JWT_SECRET" : jwtSecretPath(settings);
        console.error(`id ${record.id}; scopes: ${scopes.join(",")}; expires ${record.expiresAt}; signed with ${from}`);
        console.log(token);
        return 0;
      },
      { create: true },
    );
  },
});

const list = defineCommand({
  name: "token list",
  summary: "list management tokens: id, scopes, label, expiry, state",
  notes:
    "The tokens made by `token create` (never the tokens themselves). Tokens made before ids were recorded " +
    "are not listed until revoked; `token revoke <token>` revokes one.",
  async run({ who }) {
    return withStores(who, async ({ tokens }) => {
      const rows = await tokens.list();
      if (rows.length === 0) {
        console.log("no tokens recorded (npx cidgate token create makes one)");
        return 0;
      }
      const now = Date.now();
      const lines = rows.map((t) => {
        const status = tokenStatus(t, now);
        return [
          t.id,
          t.scopes.join(","),
          status === "revoked" ? `revoked ${t.revokedAt}` : `${status}, expires ${t.expiresAt}`,
          t.label ?? "",
        ];
      });
      console.log(grid([["id", "scopes", "state", "label"], ...lines], ""));
      return 0;
    });
  },
});

const revoke = defineCommand({
  name: "token revoke",
  summary: "revoke a management token by id (or give the token itself)",
  arguments: [{ name: "id", description: "an id from token list, or a whole token made before ids were recorded" }],
  notes: "A running server refuses the token from its next request on. Revoking twice is not an error.",
  async run({ positionals: [idOrToken], who }) {
    if (refusesUnsharedSecret(who)) return 2;
    return withStores(who, async ({ tokens }, { settings }) => {
      const revoked = await revokeToken(resolveJwtSecret(settings), tokens, idOrToken);
      if (!revoked) {
        console.error(
          `${who}: ${idOrToken.includes(".") ? "not a token signed with this server's secret" : "no token with this id (see cidgate token list)"}`,
        );
        return 1;
      }
      console.log(`revoked ${revoked.id} at ${revoked.revokedAt}`);
      return 0;
    });
  },
});

export const command = defineGroup("token", "management tokens for the API", [create, list, revoke]);
