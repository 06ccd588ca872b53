/**
 * The used sign-in nonces (src/entitlements/siwx-nonces.ts), written in group
 * commits: single use must hold within a batch, across batches, across two
 * connections to one file (a second process, the CLI) and across a restart;
 * and a batch the database refuses must serve nobody and record nothing.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../../src/db/client";
import { createSiwxNonceStore } from "../../src/entitlements/siwx-nonces";

const T0 = 1_800_000_000;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dbFile() {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-nonces-"));
  dirs.push(dir);
  return join(dir, "db.sqlite");
}

const rows = (db: ReturnType<typeof openDb>) =>
  db.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM siwx_nonces").get()!.n;

test("one batch: distinct nonces are each first; the same nonce twice in it is first once", async () => {
  const db = openDb(":memory:");
  const nonces = createSiwxNonceStore(db);
  const answers = await Promise.all([
    nonces.useSoon("a", T0),
    nonces.useSoon("b", T0),
    nonces.useSoon("a", T0),
    nonces.useSoon("c", T0),
    nonces.useSoon("a", T0),
  ]);
  expect(answers).toEqual([true, true, false, true, false]);
  expect(rows(db)).toBe(3);
  // a later batch, and the synchronous path, see them used
  expect(await nonces.useSoon("b", T0 + 1)).toBe(false);
  expect(nonces.use("c", T0 + 1)).toBe(false);
  db.sqlite.close();
});

test("100 racing uses of one nonce over two connections to one file: exactly one first", async () => {
  const path = dbFile();
  const one = openDb(path);
  const two = openDb(path);
  try {
    const a = createSiwxNonceStore(one);
    const b = createSiwxNonceStore(two);
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).useSoon(`n:${i % 10}`, T0)),
    );
    // ten nonces, ten uses each: each nonce first exactly once, whichever connection won it
    for (let k = 0; k < 10; k++) expect(answers.filter((first, i) => first && i % 10 === k)).toHaveLength(1);
    // what one process wrote synchronously (the CLI, an older server) the other refuses in its batch
    expect(a.use("cli", T0)).toBe(true);
    expect(await b.useSoon("cli", T0)).toBe(false);
  } finally {
    one.sqlite.close();
    two.sqlite.close();
  }
});

test("after a restart a used nonce is still used", async () => {
  const path = dbFile();
  const before = openDb(path);
  expect(await createSiwxNonceStore(before).useSoon("kept", T0)).toBe(true);
  before.sqlite.close();
  const after = openDb(path);
  try {
    expect(await createSiwxNonceStore(after).useSoon("kept", T0 + 5)).toBe(false);
  } finally {
    after.sqlite.close();
  }
});

test("a batch the database refuses rejects every caller in it and records none of it", async () => {
  const db = openDb(":memory:");
  const nonces = createSiwxNonceStore(db);
  // Fault injection: the database refuses one row, as a full disk or a lock would refuse the commit.
  db.sqlite.exec(
    "CREATE TEMP TRIGGER refuse BEFORE INSERT ON siwx_nonces WHEN NEW.nonce = 'boom' BEGIN SELECT RAISE(ABORT, 'refused'); END",
  );
  const answers = await Promise.allSettled([
    nonces.useSoon("x", T0),
    nonces.useSoon("boom", T0),
    nonces.useSoon("y", T0),
  ]);
  expect(answers.map((a) => a.status)).toEqual(["rejected", "rejected", "rejected"]);
  expect(rows(db)).toBe(0);
  db.sqlite.exec("DROP TRIGGER refuse");
  // nothing was spent: the same sign-ins are first now
  expect(await Promise.all([nonces.useSoon("x", T0), nonces.useSoon("y", T0)])).toEqual([true, true]);
  db.sqlite.close();
});

test("more than one batch's worth at once: every use answered, each nonce first once", async () => {
  const db = openDb(":memory:");
  const nonces = createSiwxNonceStore(db);
  const answers = await Promise.all(Array.from({ length: 1500 }, (_, i) => nonces.useSoon(`k${i % 1000}`, T0)));
  expect(answers.filter(Boolean)).toHaveLength(1000);
  expect(answers.slice(0, 1000).every(Boolean)).toBe(true);
  expect(rows(db)).toBe(1000);
  db.sqlite.close();
});
