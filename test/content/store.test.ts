import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cidOfBytes } from "../../src/content/cid";
import { indexContent } from "../../src/content/indexer";
import { listContent, lookupContent } from "../../src/content/store";
import { type Db, openDb } from "../../src/db/client";

let base: string;
let dir: string;
let db: Db;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "cidgate-store-"));
  dir = join(base, "content");
  mkdirSync(join(dir, "articles"), { recursive: true });
  db = openDb(":memory:");
});
afterEach(() => {
  db.sqlite.close();
  rmSync(base, { recursive: true, force: true });
});

const cidOf = async (text: string) => (await cidOfBytes(new TextEncoder().encode(text))).toString();

describe("content index", () => {
  test("indexes every regular file by CID with size and media type", async () => {
    writeFileSync(join(dir, "articles/a.md"), "# A\n");
    writeFileSync(join(dir, "b.png"), "not really a png");
    const changes = await indexContent(db, dir);
    expect(changes.added.sort()).toEqual(["articles/a.md", "b.png"]);

    const a = lookupContent(db, { contentDir: dir }, await cidOf("# A\n"));
    expect(a).toMatchObject({ absolutePath: join(dir, "articles/a.md"), size: 4, mediaType: "text/markdown" });
    expect(lookupContent(db, { contentDir: dir }, await cidOf("not really a png"))?.mediaType).toBe("image/png");
    expect(lookupContent(db, { contentDir: dir }, await cidOf("nothing"))).toBeUndefined();
    expect(lookupContent(db, { contentDir: dir }, "not-a-cid")).toBeUndefined();
  });

  test("a file is hashed once per change, never again while unchanged", async () => {
    writeFileSync(join(dir, "a.txt"), "one");
    await indexContent(db, dir);
    // Plant a marker CID: if a later pass re-hashed the unchanged file, the marker would vanish.
    db.sqlite.run("UPDATE content_files SET cid = 'marker' WHERE path = 'a.txt'");
    const again = await indexContent(db, dir);
    expect(again).toMatchObject({ added: [], changed: [], removed: [], unchanged: 1 });
    expect(listContent(db)).toEqual([{ path: "a.txt", cid: "marker" }]);

    writeFileSync(join(dir, "a.txt"), "two!");
    const later = new Date(Date.now() + 5000);
    utimesSync(join(dir, "a.txt"), later, later);
    expect((await indexContent(db, dir)).changed).toEqual(["a.txt"]);
    expect(listContent(db)).toEqual([{ path: "a.txt", cid: await cidOf("two!") }]);
  });

  test("a vanished file leaves the index", async () => {
    writeFileSync(join(dir, "a.txt"), "one");
    await indexContent(db, dir);
    expect(lookupContent(db, { contentDir: dir }, await cidOf("one"))?.absolutePath).toBe(join(dir, "a.txt"));
    unlinkSync(join(dir, "a.txt"));
    expect((await indexContent(db, dir)).removed).toEqual(["a.txt"]);
    expect(lookupContent(db, { contentDir: dir }, await cidOf("one"))).toBeUndefined();
  });

  test("the folder missing means nothing to serve: what it held leaves the index", async () => {
    writeFileSync(join(dir, "a.txt"), "one");
    writeFileSync(join(dir, "articles/b.md"), "# B\n");
    await indexContent(db, dir);
    expect(lookupContent(db, { contentDir: dir }, await cidOf("one"))?.absolutePath).toBe(join(dir, "a.txt"));
    expect(listContent(db)).toHaveLength(2);
    rmSync(dir, { recursive: true });
    const changes = await indexContent(db, dir);
    expect(changes).toMatchObject({ added: [], errors: [] });
    expect(changes.removed.sort()).toEqual(["a.txt", "articles/b.md"]);
    expect(listContent(db)).toEqual([]);
    expect(lookupContent(db, { contentDir: dir }, await cidOf("one"))).toBeUndefined();
  });

  test("nothing outside the folder is indexed: links are not followed, hidden names are skipped", async () => {
    const outside = join(base, "secret.txt");
    writeFileSync(outside, "top secret");
    mkdirSync(join(base, "elsewhere"));
    writeFileSync(join(base, "elsewhere/x.txt"), "also secret");
    symlinkSync(outside, join(dir, "link.txt"));
    symlinkSync(join(base, "elsewhere"), join(dir, "linked-dir"));
    symlinkSync(join(dir, "articles"), join(dir, "inner-link"));
    writeFileSync(join(dir, ".env"), "KEY=1");
    mkdirSync(join(dir, ".git"));
    writeFileSync(join(dir, ".git/config"), "[core]");
    writeFileSync(join(dir, "ok.txt"), "fine");

    await indexContent(db, dir);
    expect(listContent(db).map((r) => r.path)).toEqual(["ok.txt"]);
    for (const text of ["top secret", "also secret", "KEY=1", "[core]"]) {
      expect(lookupContent(db, { contentDir: dir }, await cidOf(text))).toBeUndefined();
    }
  });

  test("a stored path that would leave the folder is refused, not served", async () => {
    db.sqlite.run("INSERT INTO content_files (path, cid, size, mtime_ms, media_type) VALUES ('../secret.txt', 'x', 1, 1, 'text/plain')");
    expect(lookupContent(db, { contentDir: dir }, "x")).toBeUndefined();
  });

  test("any spelling of the CID finds the file; duplicates resolve to one file", async () => {
    writeFileSync(join(dir, "a.txt"), "same");
    writeFileSync(join(dir, "b.txt"), "same");
    await indexContent(db, dir);
    const cid = await cidOf("same");
    const { base36 } = await import("multiformats/bases/base36");
    const { CID } = await import("multiformats/cid");
    const other = CID.parse(cid).toString(base36);
    expect([join(dir, "a.txt"), join(dir, "b.txt")]).toContain(lookupContent(db, { contentDir: dir }, other)!.absolutePath);
  });
});
