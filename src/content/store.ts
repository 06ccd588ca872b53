/**
 * cid -> file, read from the content_files index (filled by indexer.ts).
 * A request never hashes and never walks the folder: one indexed query.
 */
import type { Statement } from "bun:sqlite";
import type { Db } from "../db/client";
import type { Settings } from "../settings";
import { canonicalCid } from "./cid";
import { absoluteContentPath, contentRoot } from "./paths";

export interface ContentFile {
  /** Absolute path of the file, always inside the content folder. */
  absolutePath: string;
  size: number;
  mediaType: string;
  mtimeMs: number;
}

interface Row {
  path: string;
  size: number;
  mtimeMs: number;
  mediaType: string;
}

// One prepared statement per database: the gateway asks on every request.
const statements = new WeakMap<Db, Statement<Row, [string]>>();

function statementFor(db: Db) {
  let s = statements.get(db);
  if (!s) {
    // Several files may hold the same bytes; any of them serves the CID. (No ORDER BY: sorting
    // the matches costs a temporary b-tree per request, five times the lookup itself.)
    s = db.sqlite.query<Row, [string]>(
      "SELECT path, size, mtime_ms AS mtimeMs, media_type AS mediaType FROM content_files WHERE cid = ? LIMIT 1",
    );
    statements.set(db, s);
  }
  return s;
}

// resolve() per request would cost more than the query; the setting never changes while running.
const roots = new Map<string, string>();
const rootOf = (dir: string) => roots.get(dir) ?? (roots.set(dir, contentRoot(dir)), roots.get(dir)!);

/**
 * The file whose contents have CID `cid` (any spelling; stored v1 base32 /
 * v0 Qm...), or undefined when no file in the content folder has it.
 */
export function lookupContent(db: Db, settings: Pick<Settings, "contentDir">, cid: string): ContentFile | undefined {
  const stmt = statementFor(db);
  let row = stmt.get(cid);
  if (!row) {
    const canonical = canonicalCid(cid);
    if (canonical && canonical !== cid) row = stmt.get(canonical);
  }
  if (!row) return undefined;
  let absolutePath: string;
  try {
    absolutePath = absoluteContentPath(rootOf(settings.contentDir), row.path);
  } catch {
    return undefined; // a row the indexer never writes (.., absolute, hidden): refuse to serve it
  }
  return {
    absolutePath,
    size: row.size,
    mediaType: row.mediaType,
    mtimeMs: row.mtimeMs,
  };
}

/** Every indexed file as {path, cid}: what `files:` globs in pricing are matched against. */
export function listContent(db: Db): { path: string; cid: string }[] {
  return db.sqlite.query<{ path: string; cid: string }, []>("SELECT path, cid FROM content_files ORDER BY path").all();
}
