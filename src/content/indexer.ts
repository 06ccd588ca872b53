/**
 * Keeps content_files in step with the content folder: a walk compares each
 * file's identity (size, mtime, inode and ctime: identity.ts) with its row and
 * hashes only files that are new or changed, so a file is hashed once per
 * change and never per request. Size and mtime alone are not enough: a
 * rewrite with `touch -d` keeps both, and would be sold under the old CID.
 *
 * Only regular files are indexed. Symbolic links are not followed (the root
 * folder itself may be one), and hidden names are skipped, so nothing outside
 * the folder, and no half-written temp file, is ever indexed or served.
 * The rows are read and written through the content store (store.ts), the
 * table's only writer; this file walks, compares and hashes.
 */
import type { Dirent } from "node:fs";
import { lstat, readdir, realpath, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import { cidOfFile } from "./cid";
import { type FileIdentity, identityOf, sameIdentity } from "./identity";
import { mediaTypeOf } from "./media";
import { toStoredPath } from "./paths";

export interface IndexChanges {
  added: string[];
  changed: string[];
  removed: string[];
  unchanged: number;
  /** Files that could not be read; they keep their previous row, if any. */
  errors: { path: string; message: string }[];
}

/** What the index keeps of a file to tell whether it changed. */
export interface IndexedFile extends FileIdentity {
  path: string;
  cid: string;
}

/** The content_files table as the walk sees it; the content store implements it. */
export interface IndexTable {
  rows(): IndexedFile[];
  /** Writes all changes in one transaction; called only when there is something to write. */
  write(upserts: (IndexedFile & { mediaType: string })[], removed: string[]): void;
}

interface Seen extends FileIdentity {
  path: string;
  absolute: string;
}

async function walk(root: string, dir: string, out: Seen[], errors: IndexChanges["errors"]): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (e) {
    if (dir === root && (e as NodeJS.ErrnoException).code === "ENOENT") return; // no folder: nothing to serve
    errors.push({ path: toStoredPath(relative(root, dir)) || ".", message: (e as Error).message });
    return;
  }
  for (const entry of entries) {
    if (entry.name.startsWith(".")) continue;
    const absolute = join(dir, entry.name);
    if (entry.isDirectory()) {
      await walk(root, absolute, out, errors);
    } else if (entry.isFile()) {
      try {
        const s = await lstat(absolute);
        if (!s.isFile()) continue; // replaced by a link or folder since readdir
        out.push({ path: toStoredPath(relative(root, absolute)), absolute, ...identityOf(s) });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") {
          errors.push({ path: toStoredPath(relative(root, absolute)), message: (e as Error).message });
        }
      }
    }
    // Symbolic links, sockets, devices: never indexed.
  }
}

/**
 * Brings `table` up to date with `contentDir` and says what changed.
 * Hashing happens outside any transaction; all rows are then written in one.
 */
export async function indexFolder(contentDir: string, table: IndexTable): Promise<IndexChanges> {
  const changes: IndexChanges = { added: [], changed: [], removed: [], unchanged: 0, errors: [] };
  let root: string;
  try {
    root = await realpath(contentDir);
  } catch {
    root = "";
  }
  const seen: Seen[] = [];
  if (root) await walk(root, root, seen, changes.errors);

  const known = new Map(table.rows().map((r) => [r.path, r]));
  const upserts: (IndexedFile & { mediaType: string })[] = [];

  for (const file of seen) {
    const row = known.get(file.path);
    known.delete(file.path);
    if (row && sameIdentity(row, file)) {
      changes.unchanged++;
      continue;
    }
    try {
      const cid = (await cidOfFile(file.absolute)).toString();
      // A file still being written has moved on since the walk: its next event indexes it.
      if (!sameIdentity(identityOf(await stat(file.absolute)), file)) continue;
      const { absolute: _, ...identified } = file;
      upserts.push({ ...identified, cid, mediaType: mediaTypeOf(file.path) });
      // Same bytes, new identity (a chmod, a copy back, a row from before inodes were kept): not a change.
      if (row?.cid !== cid) (row ? changes.changed : changes.added).push(file.path);
      else changes.unchanged++;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") {
        if (row) known.set(file.path, row); // vanished while hashing: remove it below
        continue;
      }
      changes.errors.push({ path: file.path, message: (e as Error).message });
    }
  }
  // Rows of files that were unreadable this time stay; rows of files that are gone go.
  const unreadable = new Set(changes.errors.map((e) => e.path));
  for (const path of known.keys()) if (!unreadable.has(path)) changes.removed.push(path);

  if (upserts.length || changes.removed.length) table.write(upserts, changes.removed);
  return changes;
}

/** True when the index moved (something added, changed or removed). */
export function indexMoved(c: IndexChanges): boolean {
  return c.added.length + c.changed.length + c.removed.length > 0;
}
