/**
 * What tells one version of a file from another without reading it: size,
 * mtime, inode and ctime. `touch -d` restores an mtime but cannot restore a
 * ctime (any write or rename moves it), and an editor's save-by-rename gives
 * a new inode. When all four match, the bytes are the ones hashed; when any
 * differs, the file is in doubt and only a re-hash can say (indexer.ts before
 * indexing, file-handle.ts before and after a charge).
 */
import type { Stats } from "node:fs";

export interface FileIdentity {
  size: number;
  /** Whole milliseconds (the column's unit, and what earlier rows hold). */
  mtimeMs: number;
  ino: number;
  /** Whole microseconds: a rewrite within the same millisecond as the walk still moves it. */
  ctimeUs: number;
}

export function identityOf(s: Pick<Stats, "size" | "mtimeMs" | "ino" | "ctimeMs">): FileIdentity {
  return { size: s.size, mtimeMs: Math.trunc(s.mtimeMs), ino: s.ino, ctimeUs: Math.round(s.ctimeMs * 1000) };
}

export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino && a.ctimeUs === b.ctimeUs;
}
