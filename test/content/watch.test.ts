import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cidOfBytes } from "../../src/content/cid";
import { type ContentStore, createContentStore } from "../../src/content/store";
import type { FolderWatcher } from "../../src/content/watch";
import { createCatalogChanges } from "../../src/db/changes";
import { type Db, openDb } from "../../src/db/client";
import { eventually } from "../support/eventually";

let dir: string;
let db: Db;
let content: ContentStore;
let watcher: FolderWatcher;
let notified = 0;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cidgate-watch-"));
  db = openDb(":memory:");
  content = createContentStore(db, { contentDir: dir }, createCatalogChanges());
  watcher = content.watch({ onIndexed: () => void notified++ });
});
afterAll(async () => {
  await watcher.close();
  db.sqlite.close();
  rmSync(dir, { recursive: true, force: true });
});

const cidOf = async (t: string) => (await cidOfBytes(new TextEncoder().encode(t))).toString();
test("files that appear, change and vanish while running are indexed", async () => {
  const v1 = await cidOf("first");
  const v2 = await cidOf("second, longer");
  writeFileSync(join(dir, "a.txt"), "first");
  await eventually(() => content.lookup(v1) !== undefined);
  expect(notified).toBe(1);

  writeFileSync(join(dir, "a.txt"), "second, longer");
  await eventually(() => content.lookup(v2) !== undefined);
  expect(content.lookup(v1)).toBeUndefined();

  rmSync(join(dir, "a.txt"));
  await eventually(() => content.lookup(v2) === undefined);
  expect(notified).toBe(3);

  // A temp file that is never renamed into place is never indexed, and does not wake pricing:
  // written before a visible file, it is behind us once that file is indexed (no fixed wait).
  writeFileSync(join(dir, ".upload.tmp"), "partial");
  const after = await cidOf("after the temp file");
  writeFileSync(join(dir, "b.txt"), "after the temp file");
  await eventually(() => content.lookup(after) !== undefined, "b.txt indexed");
  expect(notified).toBe(4); // b.txt's change only
  expect(content.list().map((r) => r.path)).toEqual(["b.txt"]);
});

test("a content folder created after start is found by the slow poll, then watched", async () => {
  const later = join(dir, "..", `${dir.split("/").pop()}-later`);
  const db2 = openDb(":memory:");
  let runs = 0;
  // the folder does not exist yet: no events can come from it; the poll (here 200 ms) must find it
  const content2 = createContentStore(db2, { contentDir: later }, createCatalogChanges());
  const w = content2.watch({ pollMs: 200, onIndexed: () => void runs++ });
  try {
    const { mkdirSync } = await import("node:fs");
    mkdirSync(later);
    writeFileSync(join(later, "late.txt"), "late");
    const late = await cidOf("late");
    await eventually(() => content2.lookup(late) !== undefined, "late.txt indexed");
    // from then on it is watched: a change is picked up too
    writeFileSync(join(later, "later.txt"), "later still");
    const laterCid = await cidOf("later still");
    await eventually(() => content2.lookup(laterCid) !== undefined, "later.txt indexed");
    expect(
      content2
        .list()
        .map((r) => r.path)
        .sort(),
    ).toEqual(["late.txt", "later.txt"]);
    expect(runs).toBeGreaterThanOrEqual(1);
  } finally {
    await w.close();
    db2.sqlite.close();
    rmSync(later, { recursive: true, force: true });
  }
});
