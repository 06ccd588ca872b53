/**
 * Paths under the content folder. Stored paths are relative and "/"-separated;
 * anything absolute, with a `..` segment, or hidden (a segment starting with
 * ".") is refused so no stored or requested path can leave the folder or
 * reach editor and tool droppings such as .git or half-written temp files.
 */
import { isAbsolute, join, resolve, sep } from "node:path";

/** The content folder as an absolute path. */
export function contentRoot(contentDir: string): string {
  return resolve(contentDir);
}

/** Why `relative` cannot name a content file, or undefined when it can. */
export function relativePathProblem(relative: string): string | undefined {
  if (relative === "") return "is empty";
  if (relative.includes("\0")) return "contains a NUL byte";
  if (isAbsolute(relative) || /^[A-Za-z]:/.test(relative)) return "must be relative to the content folder";
  const segments = relative.split(/[\\/]+/);
  if (segments.includes("..")) return "must not contain '..'";
  if (segments.some((s) => s.startsWith(".") && s !== ".")) return "must not name a hidden file or folder";
  return undefined;
}

/** Absolute path of a stored relative path; throws if it could leave the root. */
export function absoluteContentPath(root: string, relative: string): string {
  const problem = relativePathProblem(relative);
  if (problem) throw new Error(`content path ${JSON.stringify(relative)} ${problem}`);
  const full = join(root, relative);
  if (full !== root && !full.startsWith(root.endsWith(sep) ? root : root + sep)) {
    throw new Error(`content path ${JSON.stringify(relative)} leaves the content folder`);
  }
  return full;
}

/** "/"-separated form of a path relative to the root, whatever the platform. */
export function toStoredPath(relative: string): string {
  return relative.split(sep).join("/");
}
