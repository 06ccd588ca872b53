/**
 * The HS256 secret of management tokens: JWT_SECRET when set, otherwise a
 * random secret generated once into the data folder (mode 0600) and reused,
 * so tokens survive restarts and the server and `cidgate token` agree.
 */
import { randomBytes } from "node:crypto";
import { existsSync, linkSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensurePrivateDir, tightenPrivateFile, type Warn } from "../private-files";
import type { Settings } from "../settings";

export const JWT_SECRET_FILE = "jwt-secret";

export function jwtSecretPath(settings: Pick<Settings, "dataDir">): string {
  return join(settings.dataDir, JWT_SECRET_FILE);
}

export function resolveJwtSecret(settings: Pick<Settings, "jwtSecret" | "dataDir">, warn?: Warn): string {
  if (settings.jwtSecret !== undefined) return settings.jwtSecret;
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
