/**
 * Absolute paths appear in logs only at debug level: an error message from
 * the filesystem ("ENOENT: no such file or directory, open '/srv/...'")
 * is logged with its paths cut out, and whole, path and all, at debug.
 */
import { describeError } from "./errors";
import type { Logger } from "./logging";

/** Absolute POSIX and Windows paths, quoted or bare. */
const ABSOLUTE = /(?<![\w:/.])(?:\/|[A-Za-z]:[\\/])[^\s'",)]*/g;

/** The message with every absolute path replaced by `<path>`. */
export function withoutPaths(message: string): string {
  return message.replace(ABSOLUTE, "<path>");
}

/** A failed query's parameters (a webhook's secret, a proof) never reach the log: see describeError. */
const messageOf = (error: unknown) =>
  error instanceof Error
    ? error.message.startsWith("Failed query:")
      ? describeError(error)
      : error.message
    : String(error);

/**
 * Logs `msg` at `level` with the error's message, paths cut out; the whole
 * message goes to debug (seen only by an operator who asked for it).
 */
export function logFailure(
  log: Logger | undefined,
  level: "warn" | "error",
  fields: Record<string, unknown>,
  msg: string,
  error: unknown,
): void {
  if (!log) return;
  const message = messageOf(error);
  log[level]({ ...fields, err: withoutPaths(message) }, msg);
  if (log.isLevelEnabled?.("debug")) log.debug({ ...fields, err: message }, msg);
}
