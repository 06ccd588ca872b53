/**
 * The content_files index and its only writer. A store is made once per app
 * from a database handle, the settings (the content folder) and the app's
 * catalog signal (`createContentStore(db, settings, changes)`); it holds its
 * prepared statements and bumps the signal once per committed re-index.
 *
 * cid -> file is read from the index (filled by `index()`, kept current by
 * `watch()`): a request never hashes and never walks the folder, one
 * indexed query.
 */
import type { CatalogChanges } from "../db/changes";
import type { Db } from "../db/client";
import type { Settings } from "../settings";
import { canonicalCid } from "./cid";
import type { FileIdentity } from "./identity";
import { type IndexChanges, type IndexedFile, indexFolder } from "./indexer";
import { absoluteContentPath, contentRoot } from "./paths";
import { type ContentWatchOptions, type FolderWatcher, watchContent } from "./watch";

export interface ContentFile extends FileIdentity {
  /** Absolute path of the file, always inside the content folder (never logged above debug). */
  absolutePath: string;
  mediaType: string;
}

interface Row extends FileIdentity {
  path: string;
  mediaType: string;
}

export type ContentStore = ReturnType<typeof createContentStore>;

export function createContentStore(db: Db, settings: Pick<Settings, "contentDir">, changes: CatalogChanges) {
  const sql = db.sqlite;
  // Prepared once with the store: the gateway asks on every request. Several files may hold the
  // same bytes; any of them serves the CID. (No ORDER BY: sorting the matches costs a temporary
  // b-tree per request, five times the lookup itself.)
  const byCid = sql.query<Row, [string]>(
    "SELECT path, size, mtime_ms AS mtimeMs, ino, ctime_us AS ctimeUs, media_type AS mediaType FROM content_files WHERE cid = ? LIMIT 1",
  );
  const all = sql.query<{ path: string; cid: string }, []>("SELECT path, cid FROM content_files ORDER BY path");
  const indexed = sql.query<IndexedFile, []>(
    "SELECT path, cid, size, mtime_ms AS mtimeMs, ino, ctime_us AS ctimeUs FROM content_files",
  );
  const upsert = sql.query<never, [string, string, number, number, number, number, string]>(
    `INSERT INTO content_files (path, cid, size, mtime_ms, ino, ctime_us, media_type) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(path) DO UPDATE SET cid = excluded.cid, size = excluded.size, mtime_ms = excluded.mtime_ms,
     ino = excluded.ino, ctime_us = excluded.ctime_us, media_type = excluded.media_type`,
  );
  const remove = sql.query<never, [string]>("DELETE FROM content_files WHERE path = ?");

  // resolve() per request would cost more than the query; the setting never changes while running
  // (compared anyway, one string compare, in case a caller swaps it).
  let rootDir: string | undefined;
  let root = "";
  const rootOf = (dir: string) => (dir === rootDir ? root : ((rootDir = dir), (root = contentRoot(dir))));

  /**
   * The file whose contents have CID `cid` (any spelling; stored v1 base32 /
   * v0 Qm...), or undefined when no file in the content folder has it.
   */
  function lookup(cid: string): ContentFile | undefined {
    let row = byCid.get(cid);
    if (!row) {
      const canonical = canonicalCid(cid);
      if (canonical && canonical !== cid) row = byCid.get(canonical);
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
      ino: row.ino,
      ctimeUs: row.ctimeUs,
    };
  }

  /** Every indexed file as {path, cid}: what `files:` globs in pricing are matched against. */
  function list(): { path: string; cid: string }[] {
    return all.all();
  }

  /**
   * Brings the index up to date with the content folder and says what
   * changed. Hashing happens outside any transaction; all rows are then
   * written in one.
   */
  function index(): Promise<IndexChanges> {
    return indexFolder(settings.contentDir, {
      rows: () => indexed.all(),
      write(upserts, removed) {
        sql.transaction(() => {
          for (const u of upserts) upsert.run(u.path, u.cid, u.size, u.mtimeMs, u.ino, u.ctimeUs, u.mediaType);
          for (const path of removed) remove.run(path);
        })();
        changes.bump(); // the gateway's catalog must not serve the old file
      },
    });
  }

  /** Keeps the index current while the server runs: `index()` on every change to the folder. */
  function watch(opts: ContentWatchOptions = {}): FolderWatcher {
    return watchContent(settings.contentDir, index, opts);
  }

  return { lookup, list, index, watch };
}
