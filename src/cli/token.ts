/**
 * `cidgate token create --scope read,write --ttl 30d`: prints a management
 * token signed with the server's secret (JWT_SECRET, or the one generated
 * into the data folder). Only the token goes to stdout, so it can be captured:
 *   TOKEN=$(bun run --silent cidgate token create --scope read)
 */
import { jwtSecretPath, resolveJwtSecret } from "../http/jwt-secret";
import { createToken, parseScopes, parseTtl } from "../http/token";
import { loadSettingsOrReport } from "../settings";
import { parseOptions } from "./args";

const USAGE = `usage: cidgate token create [--scope read,write] [--ttl 30d]
  --scope  comma-separated scopes: read (GET), write (POST/PATCH/PUT/DELETE); default read,write
  --ttl    lifetime: 3600, 90s, 15m, 12h, 30d, 2w (at most 10 years); default 30d`;

export async function run(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined || sub === "help" || sub === "--help" || rest.includes("--help")) {
    console.log(USAGE);
    return 0;
  }
  if (sub !== "create") {
    console.error(USAGE);
    return 2;
  }
  const parsed = parseOptions(rest, { scope: "string", ttl: "string" });
  if (parsed.unknown !== undefined) {
    console.error(`cidgate token: unknown option ${parsed.unknown}\n${USAGE}`);
    return 2;
  }
  const scopeText = parsed.values.scope ?? "read,write";
  const scopes = parseScopes(scopeText);
  if (!scopes) {
    console.error(`cidgate token: --scope must be read, write or read,write (got "${scopeText}")`);
    return 2;
  }
  const ttlText = parsed.values.ttl ?? "30d";
  const ttlSeconds = parseTtl(ttlText);
  if (ttlSeconds === undefined) {
    console.error(`cidgate token: --ttl must look like 3600, 15m, 12h or 30d, at most 10 years (got "${ttlText}")`);
    return 2;
  }

  const settings = loadSettingsOrReport("cidgate");
  if (!settings) return 2;
  const secret = resolveJwtSecret(settings);
  const token = await createToken(secret, { scopes, ttlSeconds });
  const expires = new Date((Math.floor(Date.now() / 1000) + ttlSeconds) * 1000).toISOString();
  const from = settings.jwtSecret !== undefined ? "JWT_SECRET" : jwtSecretPath(settings);
  console.error(`scopes: ${scopes.join(",")}; expires ${expires}; signed with ${from}`);
  console.log(token);
  return 0;
}
