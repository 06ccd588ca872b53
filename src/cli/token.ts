/**
 * `cidgate token create --scope read,write --ttl 30d`: prints a management
 * token signed with the server's secret (JWT_SECRET, or the one generated
 * into the data folder). Only the token goes to stdout, so it can be captured:
 *   TOKEN=$(npx cidgate token create --scope read)
 */

import { parseTtl } from "../duration";
import { jwtSecretPath, resolveJwtSecret } from "../http/jwt-secret";
import { createToken, parseScopes } from "../http/token";
import { loadSettingsOrReport } from "../settings";
import { defineCommand, UsageError } from "./command";

export const command = defineCommand({
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
      description: "lifetime with its unit: 90s, 15m, 12h, 30d, 2w (at most 10 years); default 30d",
    },
  },
  notes: "Signed with JWT_SECRET, or with the secret generated once into the data folder.",
  async run({ values, who }) {
    const scopeText = values.scope ?? "read,write";
    const scopes = parseScopes(scopeText);
    if (!scopes) throw new UsageError(`--scope must be read, write or read,write (got "${scopeText}")`);
    const ttlText = values.ttl ?? "30d";
    const ttlSeconds = parseTtl(ttlText);
    if (ttlSeconds === undefined) {
      throw new UsageError(
        /^\s*\d+\s*$/.test(ttlText)
          ? `--ttl needs a unit: s, m, h, d or w, as in ${ttlText.trim()}s or ${ttlText.trim()}d (got "${ttlText}")`
          : `--ttl must look like 90s, 15m, 12h, 30d or 2w, at most 10 years (got "${ttlText}")`,
      );
    }

    const settings = loadSettingsOrReport(who);
    if (!settings) return 2;
    const secret = resolveJwtSecret(settings);
    const token = await createToken(secret, { scopes, ttlSeconds });
    const expires = new Date((Math.floor(Date.now() / 1000) + ttlSeconds) * 1000).toISOString();
    const from = settings.jwtSecret !== undefined ? "JWT_SECRET" : jwtSecretPath(settings);
    console.error(`scopes: ${scopes.join(",")}; expires ${expires}; signed with ${from}`);
    console.log(token);
    return 0;
  },
});
