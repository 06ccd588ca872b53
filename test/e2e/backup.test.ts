/**
 * `cidgate backup` while buyers pay (real devnet, real facilitator, the
 * x402-fetch client), then `cidgate restore`: the backup passes
 * integrity_check and holds every payment settled before it began, and a
 * restore brings those rows back into a database of this version.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { createSigner, wrapFetchWithPayment } from "x402-fetch";
import { eventually } from "../support/eventually";
import { createTestStack, type TestStack } from "./stack";

const MAIN = join(import.meta.dir, "../../src/cli/main.ts");
const FILES = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`file-${i}.txt`, `paid file number ${i}\n`]));

let stack: TestStack;
beforeAll(async () => {
  stack = await createTestStack({ files: FILES, buyers: 3, dbFile: true });
});
afterAll(async () => {
  await stack?.stop();
});

async function cidgate(args: string[], db: string) {
  const child = Bun.spawn([process.execPath, MAIN, ...args], {
    env: { PATH: process.env.PATH ?? "", CIDGATE_DB: db },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, out, err] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  return { code, out, err };
}

type Row = { id: number; state: string; tx_hash: string | null; cid: string; payer: string };
const settledRows = (sqlite: Database) =>
  sqlite
    .query<Row, []>("SELECT id, state, tx_hash, cid, payer FROM payments WHERE state = 'settled' ORDER BY id")
    .all();

test("a backup taken during paid traffic holds every payment settled before it; restore brings them back", async () => {
  const dir = dirname(stack.settings.db);
  // Every buyer buys every file, one after another: 18 settlements on chain while the backup runs.
  const results: number[] = [];
  const traffic = Promise.all(
    stack.devnet.buyers.map(async (buyer) => {
      const pay = wrapFetchWithPayment(fetch, (await createSigner("base-sepolia", buyer.privateKey)) as never);
      for (const name of Object.keys(FILES)) {
        const res = await pay(`${stack.url}/x402/cid/${stack.cids[name]}`);
        expect(await res.text()).toBe(FILES[name]);
        results.push(res.status);
      }
    }),
  );

  await eventually(() => settledRows(stack.db.sqlite).length >= 3, "three payments settled");
  const before = settledRows(stack.db.sqlite);
  const file = join(dir, "during-traffic.db");
  const backup = await cidgate(["backup", file], stack.settings.db);
  expect(backup).toMatchObject({ code: 0, err: "" });
  await traffic;
  expect(results).toEqual(Array(18).fill(200));
  const all = settledRows(stack.db.sqlite);
  expect(all).toHaveLength(18);

  const copy = new Database(file, { readonly: true });
  expect(copy.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
  const inBackup = settledRows(copy);
  // Rows still settling when the backup began are in it as pending: claimed, for recovery to resolve.
  const rowsInBackup = copy.query<{ n: number }, []>("SELECT count(*) AS n FROM payments").get()!.n;
  copy.close();
  // Everything settled before the backup began, with its transaction; nothing the ledger does not hold.
  expect(inBackup).toEqual(expect.arrayContaining(before));
  for (const row of inBackup) expect(all).toContainEqual(row);

  // Restore into a fresh database of this version.
  const restoredDb = join(dir, "restored.db");
  const restored = await cidgate(["restore", file], restoredDb);
  expect(restored.code).toBe(0);
  expect(restored.out).toContain(`payments ${rowsInBackup},`);
  const back = new Database(restoredDb, { readonly: true });
  expect(back.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
  expect(settledRows(back)).toEqual(inBackup);
  back.close();
  expect(readdirSync(dir).some((f) => f.startsWith("restored.db.before-restore-"))).toBe(true);

  // Restored into the live database while the server runs: the file stays, the server reads the restored rows.
  const live = await cidgate(["restore", file], stack.settings.db);
  expect(live.code).toBe(0);
  expect(settledRows(stack.db.sqlite)).toEqual(inBackup);
  expect(stack.db.sqlite.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
  const offer = await fetch(`${stack.url}/x402/cid/${stack.cids["file-0.txt"]}`);
  expect(offer.status).toBe(402);
  expect((await fetch(`${stack.url}/readyz`)).status).toBe(200);

  // A backup never overwrites: the same name again is refused, the first copy intact.
  const again = await cidgate(["backup", file], stack.settings.db);
  expect(again.code).toBe(1);
  expect(again.err).toContain("exists already");
  expect(existsSync(file)).toBe(true);
}, 180_000);
