import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cidOfBytes } from "../../src/content/cid";
import { type ContentStore, createContentStore } from "../../src/content/store";
import type { FolderWatcher } from "../../src/content/watch";
import { createCatalogChanges } from "../../src/db/changes";
import { type Db, openDb } from "../../src/db/client";

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
async function within1s(check: () => boolean) {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > 1000) throw new Error("not indexed within 1 s");
    await Bun.sleep(10);
  }
}

test("files that appear, change and vanish while running are indexed within a second", async () => {
  const v1 = await cidOf("first");
  const v2 = await cidOf("second, longer");
  writeFileSync(join(dir, "a.txt"), "first");
  await within1s(() => content.lookup(v1) !== undefined);
  expect(notified).toBe(1);

  writeFileSync(join(dir, "a.txt"), "second, longer");
  await within1s(() => content.lookup(v2) !== undefined);
  expect(content.lookup(v1)).toBeUndefined();

  rmSync(join(dir, "a.txt"));
  await within1s(() => content.lookup(v2) === undefined);
  expect(notified).toBe(3);

  // A temp file that is never renamed into place is never indexed, and does not wake pricing.
  writeFileSync(join(dir, ".upload.tmp"), "partial");
  await Bun.sleep(300);
  expect(notified).toBe(3);
});
