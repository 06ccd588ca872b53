import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import {
  appendFileSync,
  chmodSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cidOfBytes } from "../../src/content/cid";
import { type ContentStore, createContentStore } from "../../src/content/store";
import { type CatalogChanges, createCatalogChanges } from "../../src/db/changes";
import { type Db, openDb } from "../../src/db/client";

let base: string;
let dir: string;
let db: Db;
let changes: CatalogChanges;
let content: ContentStore;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "cidgate-store-"));
  dir = join(base, "content");
  mkdirSync(join(dir, "articles"), { recursive: true });
  db = openDb(":memory:");
  changes = createCatalogChanges();
  content = createContentStore(db, { contentDir: dir }, changes);
});
afterEach(() => {
  db.sqlite.close();
  rmSync(base, { recursive: true, force: true });
});

/**
 * Runs `fn` without root's power to read any file (euid nobody), so a mode-000
 * file really is unreadable; as an ordinary user it just runs `fn`.
 * The folder is opened up for nobody to walk meanwhile.
 */
async function unprivileged<T>(fn: () => Promise<T>): Promise<T> {
  if (process.getuid?.() !== 0) return fn();
  chmodSync(base, 0o755);
  process.seteuid!(65534);
  try {
    return await fn();
  } finally {
    process.seteuid!(0);
  }
}

/**
 * Unlinks `path` as soon as this process has it open (Linux: /proc/<pid>/fd),
 * watched from a child process so the indexer's CPU-bound hashing cannot
 * starve the watch. Resolves true once unlinked, false if not seen open within 15 s.
 */
function unlinkOnceOpen(path: string): { ready: Promise<void>; done: Promise<boolean> } {
  const code = `
    const fs = require("node:fs");
    const [pid, path] = process.argv.slice(-2);
    const until = Date.now() + 15000;
    console.log("ready");
    for (;;) {
      if (Date.now() > until) { console.log("timeout"); process.exit(0); }
      let fds = [];
      try { fds = fs.readdirSync("/proc/" + pid + "/fd"); } catch {}
      for (const fd of fds) {
        try {
          if (fs.readlinkSync("/proc/" + pid + "/fd/" + fd) === path) { fs.unlinkSync(path); console.log("unlinked"); process.exit(0); }
        } catch {}
      }
      Bun.sleepSync(1);
    }`;
  const child = Bun.spawn([process.execPath, "-e", code, String(process.pid), path], { stdout: "pipe" });
  const reader = child.stdout.getReader();
  let text = "";
  const ready = (async () => {
    while (!text.includes("ready")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
  })();
  const done = (async () => {
    await ready;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    await child.exited;
    return text.includes("unlinked");
  })();
  return { ready, done };
}

const cidOf = async (text: string) => (await cidOfBytes(new TextEncoder().encode(text))).toString();

describe("content index", () => {
  test("indexes every regular file by CID with size and media type", async () => {
    writeFileSync(join(dir, "articles/a.md"), "# A\n");
    writeFileSync(join(dir, "b.png"), "not really a png");
    const changes = await content.index();
    expect(changes.added.sort()).toEqual(["articles/a.md", "b.png"]);

    const a = content.lookup(await cidOf("# A\n"));
    expect(a).toMatchObject({ absolutePath: join(dir, "articles/a.md"), size: 4, mediaType: "text/markdown" });
    expect(content.lookup(await cidOf("not really a png"))?.mediaType).toBe("image/png");
    expect(content.lookup(await cidOf("nothing"))).toBeUndefined();
    expect(content.lookup("not-a-cid")).toBeUndefined();
  });

  test("a file is hashed once per change, never again while unchanged", async () => {
    writeFileSync(join(dir, "a.txt"), "one");
    await content.index();
    // Plant a marker CID: if a later pass re-hashed the unchanged file, the marker would vanish.
    db.sqlite.run("UPDATE content_files SET cid = 'marker' WHERE path = 'a.txt'");
    const again = await content.index();
    expect(again).toMatchObject({ added: [], changed: [], removed: [], unchanged: 1 });
    expect(content.list()).toEqual([{ path: "a.txt", cid: "marker" }]);

    writeFileSync(join(dir, "a.txt"), "two!");
    const later = new Date(Date.now() + 5000);
    utimesSync(join(dir, "a.txt"), later, later);
    expect((await content.index()).changed).toEqual(["a.txt"]);
    expect(content.list()).toEqual([{ path: "a.txt", cid: await cidOf("two!") }]);
  });

  test("the catalog signal moves once per re-index that wrote, never for one that did not", async () => {
    writeFileSync(join(dir, "a.txt"), "one");
    writeFileSync(join(dir, "b.txt"), "two");
    await content.index();
    expect(changes.generation).toBe(1); // two rows, one transaction
    await content.index();
    expect(changes.generation).toBe(1);
    unlinkSync(join(dir, "a.txt"));
    await content.index();
    expect(changes.generation).toBe(2);
  });

  test("a vanished file leaves the index", async () => {
    writeFileSync(join(dir, "a.txt"), "one");
    await content.index();
    expect(content.lookup(await cidOf("one"))?.absolutePath).toBe(join(dir, "a.txt"));
    unlinkSync(join(dir, "a.txt"));
    expect((await content.index()).removed).toEqual(["a.txt"]);
    expect(content.lookup(await cidOf("one"))).toBeUndefined();
  });

  test("the folder missing means nothing to serve: what it held leaves the index", async () => {
    writeFileSync(join(dir, "a.txt"), "one");
    writeFileSync(join(dir, "articles/b.md"), "# B\n");
    await content.index();
    expect(content.lookup(await cidOf("one"))?.absolutePath).toBe(join(dir, "a.txt"));
    expect(content.list()).toHaveLength(2);
    rmSync(dir, { recursive: true });
    const changes = await content.index();
    expect(changes).toMatchObject({ added: [], errors: [] });
    expect(changes.removed.sort()).toEqual(["a.txt", "articles/b.md"]);
    expect(content.list()).toEqual([]);
    expect(content.lookup(await cidOf("one"))).toBeUndefined();
  });

  test("an unreadable file is reported, never indexed, and its earlier row is kept; the rest is indexed", async () => {
    writeFileSync(join(dir, "ok.txt"), "fine");
    writeFileSync(join(dir, "known.txt"), "known v1");
    await content.index();
    // now unreadable: a new file, and a known one changed since
    writeFileSync(join(dir, "locked.txt"), "locked");
    writeFileSync(join(dir, "known.txt"), "known v2, changed");
    writeFileSync(join(dir, "after.txt"), "after");
    chmodSync(join(dir, "locked.txt"), 0o000);
    chmodSync(join(dir, "known.txt"), 0o000);
    const changes = await unprivileged(() => content.index());
    expect(changes.errors.map((e) => e.path).sort()).toEqual(["known.txt", "locked.txt"]);
    for (const e of changes.errors) expect(e.message).toMatch(/EACCES|permission denied/i);
    expect(changes.added).toEqual(["after.txt"]);
    expect(changes.removed).toEqual([]);
    expect(content.lookup(await cidOf("locked"))).toBeUndefined();
    // kept as it was (not removed, not replaced): readable again, it is re-hashed
    expect(content.list()).toContainEqual({ path: "known.txt", cid: await cidOf("known v1") });
    chmodSync(join(dir, "known.txt"), 0o644);
    chmodSync(join(dir, "locked.txt"), 0o644);
    const later = await unprivileged(() => content.index());
    expect(later).toMatchObject({ added: ["locked.txt"], changed: ["known.txt"], errors: [] });
    expect(content.list()).toContainEqual({ path: "known.txt", cid: await cidOf("known v2, changed") });
  });

  test("a file that vanishes while it is hashed is not indexed, and its old row goes", async () => {
    const big = join(dir, "big.bin");
    writeFileSync(
      big,
      new Uint8Array(48 * 1024 * 1024).map((_, i) => (i * 7) & 0xff),
    );
    writeFileSync(join(dir, "small.txt"), "small");
    await content.index();
    expect(
      content
        .list()
        .map((r) => r.path)
        .sort(),
    ).toEqual(["big.bin", "small.txt"]);
    // changed, so it must be hashed again; it is deleted once the indexer has it open (seen in /proc/self/fd)
    appendFileSync(big, "more");
    const watch = unlinkOnceOpen(realpathSync(big)); // /proc shows the real path
    await watch.ready;
    const changes = await content.index();
    expect(await watch.done).toBe(true);
    expect(changes).toMatchObject({ added: [], changed: [], removed: ["big.bin"], errors: [] });
    expect(content.list().map((r) => r.path)).toEqual(["small.txt"]);
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

    await content.index();
    expect(content.list().map((r) => r.path)).toEqual(["ok.txt"]);
    for (const text of ["top secret", "also secret", "KEY=1", "[core]"]) {
      expect(content.lookup(await cidOf(text))).toBeUndefined();
    }
  });

  test("a stored path that would leave the folder is refused, not served", async () => {
    db.sqlite.run(
      "INSERT INTO content_files (path, cid, size, mtime_ms, media_type) VALUES ('../secret.txt', 'x', 1, 1, 'text/plain')",
    );
    expect(content.lookup("x")).toBeUndefined();
  });

  test("any spelling of the CID finds the file; duplicates resolve to one file", async () => {
    writeFileSync(join(dir, "a.txt"), "same");
    writeFileSync(join(dir, "b.txt"), "same");
    await content.index();
    const cid = await cidOf("same");
    const { base36 } = await import("multiformats/bases/base36");
    const { CID } = await import("multiformats/cid");
    const other = CID.parse(cid).toString(base36);
    expect([join(dir, "a.txt"), join(dir, "b.txt")]).toContain(content.lookup(other)!.absolutePath);
  });
});
