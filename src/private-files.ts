/**
 * Private state on disk: the data folder is 0700 and what it holds (the
 * database with its WAL and SHM, the JWT secret, devnet.json) 0600, so
 * other users of the machine cannot read the ledger, the payers or a key.
 *
 * A folder or file found with wider modes (created by an older version, a
 * restore, a umask) is tightened, and the operator is told once with the
 * modes before and after. A folder is tightened only when it is cidgate's
 * own: not the working folder or the root, no sticky bit (/tmp), owned by
 * this user, and holding nothing but cidgate's files (CIDGATE_DB=/var/lib/x.db
 * must not make /var/lib private); otherwise the warning says to do it by
 * hand. Warnings name the setting or the file's own name, never an absolute
 * path (paths are for debug logs only).
 */
import { chmodSync, closeSync, mkdirSync, openSync, readdirSync, statSync } from "node:fs";
import { basename, resolve } from "node:path";

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Where tightening is reported (the server's logger, or stderr for a command). */
export type Warn = (message: string) => void;

export const stderrWarn: Warn = (message) => console.warn(`cidgate: warning: ${message}`);

const octal = (mode: number) => `0${(mode & 0o777).toString(8)}`;

/** Names cidgate keeps in its data folder (with their temp and journal siblings). */
const OWN_FILE = /^(jwt-secret|devnet\.json)(\..*)?$|\.(db|sqlite3?)(-wal|-shm|-journal)?$/;

/** Whether `dir` is cidgate's own folder, safe to narrow (see the file comment). */
function ours(dir: string, mode: number, uid: number, extraNames: readonly string[]): boolean {
  const full = resolve(dir);
  if (full === resolve(".") || full === resolve("/") || (mode & 0o1000) !== 0) return false;
  if (process.getuid && uid !== process.getuid()) return false;
  return readdirSync(dir).every((n) => OWN_FILE.test(n) || extraNames.some((e) => n.startsWith(e)));
}

/**
 * Creates `dir` (and its parents) 0700, or tightens an existing one whose
 * group or others bits are set. `label` says which folder it is in the
 * warning; `ownNames` are more name prefixes of cidgate's files in it (the
 * database's own name).
 */
export function ensurePrivateDir(
  dir: string,
  label: string,
  warn: Warn = stderrWarn,
  ownNames: readonly string[] = [],
): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const { mode, uid } = statSync(dir);
  if ((mode & 0o077) === 0) return;
  if (!ours(dir, mode, uid, ownNames)) {
    // The working folder is the operator's own business (the files in it are still 0600).
    if (resolve(dir) !== resolve("."))
      warn(
        `${label} is readable by other users (${octal(mode)}) and holds more than cidgate's files: left as it is; make it 0700 if it is cidgate's alone`,
      );
    return;
  }
  chmodSync(dir, PRIVATE_DIR_MODE);
  warn(`${label} was readable by other users (${octal(mode)}); tightened to ${octal(PRIVATE_DIR_MODE)}`);
}

/** Tightens an existing file to 0600 (with a warning); a missing one is left missing. */
export function tightenPrivateFile(path: string, warn: Warn = stderrWarn): void {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return;
    throw e;
  }
  if ((mode & 0o077) === 0) return;
  chmodSync(path, PRIVATE_FILE_MODE);
  warn(`${basename(path)} was readable by other users (${octal(mode)}); tightened to ${octal(PRIVATE_FILE_MODE)}`);
}

/**
 * Creates `path` empty with mode 0600 when it does not exist (SQLite then
 * gives its WAL and SHM the database's mode), or tightens it when it does.
 */
export function ensurePrivateFile(path: string, warn: Warn = stderrWarn): void {
  try {
    closeSync(openSync(path, "wx", PRIVATE_FILE_MODE));
    return;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  tightenPrivateFile(path, warn);
}
