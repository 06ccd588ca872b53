/**
 * Private state on disk: the data folder is 0700 and what it holds (the
 * database with its WAL and SHM, the JWT secret, devnet.json) 0600, so
 * other users of the machine cannot read the ledger, the payers or a key.
 *
 * A folder or file found with wider modes (created by an older version, a
 * restore, a umask) is tightened, and the operator is told once with the
 * modes before and after. Warnings name the setting or the file's own name,
 * never an absolute path (paths are for debug logs only).
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from "node:fs";
import { basename, resolve } from "node:path";

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Where tightening is reported (the server's logger, or stderr for a command). */
export type Warn = (message: string) => void;

export const stderrWarn: Warn = (message) => console.warn(`cidgate: warning: ${message}`);

const octal = (mode: number) => `0${(mode & 0o777).toString(8)}`;

/** Leaves the modes of the working folder and the filesystem root alone: they are not ours to narrow. */
function ours(dir: string): boolean {
  const full = resolve(dir);
  return full !== resolve(".") && full !== resolve("/");
}

/**
 * Creates `dir` (and its parents) 0700, or tightens an existing one whose
 * group or others bits are set. `label` says which folder it is in the warning.
 */
export function ensurePrivateDir(dir: string, label: string, warn: Warn = stderrWarn): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (!ours(dir)) return;
  const mode = statSync(dir).mode;
  if ((mode & 0o077) === 0) return;
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
