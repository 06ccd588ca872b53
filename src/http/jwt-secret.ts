/**
 * The HS256 secret of management tokens (and the key access tokens are
 * derived from): JWT_SECRET when set, otherwise a random secret generated
 * once into the data folder (mode 0600) and reused, so tokens survive
 * restarts and the server and `cidgate token` agree.
 *
 * Not with PostgreSQL: there several replicas serve one shop, and a token
 * one signs must verify on every other, which a file generated per
 * installation cannot promise. JWT_SECRET is then required.
 */
import { randomBytes } from "node:crypto";
import { existsSync, linkSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensurePrivateDir, tightenPrivateFile, type Warn } from "../private-files";
import { type Settings, selectsPostgres } from "../settings";

export const JWT_SECRET_FILE = "jwt-secret";

export function jwtSecretPath(settings: Pick<Settings, "dataDir">): string {
  return join(settings.dataDir, JWT_SECRET_FILE);
}

/** Why the secret cannot be generated here (one line, the fix in it), or undefined when it can or need not be. */
export function sharedSecretMissing(settings: Pick<Settings, "jwtSecret"> & Partial<Pick<Settings, "db">>) {
  if (settings.jwtSecret !== undefined || settings.db === undefined || !selectsPostgres(settings.db)) return undefined;
  return (
    "CIDGATE_DB is PostgreSQL and JWT_SECRET is unset: set JWT_SECRET (32+ characters, the same on every replica); " +
    "a secret generated here would be this replica's alone, and the others would refuse its tokens"
  );
}

export function resolveJwtSecret(
  settings: Pick<Settings, "jwtSecret" | "dataDir"> & Partial<Pick<Settings, "db">>,
  warn?: Warn,
): string {
  if (settings.jwtSecret !== undefined) return settings.jwtSecret;
  const shared = sharedSecretMissing(settings);
  if (shared) throw new Error(shared);
  const path = jwtSecretPath(settings);
  ensurePrivateDir(settings.dataDir, "the data folder (CIDGATE_DATA_DIR)", warn);
  // Written whole to a private temp file, then hard-linked into place: link fails
  // if the file exists, so a server and a CLI starting together cannot each keep
  // a different secret, and nobody ever reads a half-written one.
  if (!existsSync(path)) {
    const temp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    writeFileSync(temp, `${randomBytes(32).toString("hex")}\n`, { flag: "wx", mode: 0o600 });
    try {
      linkSync(temp, path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    } finally {
      unlinkSync(temp);
    }
  }
  // Tighten a copy that was restored or edited with looser permissions.
  tightenPrivateFile(path, warn);
  const secret = readFileSync(path, "utf8").trim();
  if (secret.length < 32)
    throw new Error(`${path}: the JWT secret must be at least 32 characters; delete the file to regenerate it`);
  return secret;
}
