/**
 * The bytes served are the bytes paid for (issue 10, items 4 and 5), on a
 * real devnet with the real facilitator. The one fake is a fault injector,
 * `slowSettle`: it holds each settle until the test has moved the file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { createTestStack, type TestStack } from "../e2e/stack";
import { signProof } from "./fixtures";

const ORIGINAL: Record<string, string> = {
  "touched.txt": "the bytes the buyer pays for, version one\n",
  "deleted.txt": `deleted during the settle ${"x".repeat(300_000)}\n`, // more than one chunk
  "renamed.txt": "replaced by an editor's rename during the settle\n",
  "inplace.txt": "rewritten in place during the settle, same size\n",
};

let stack: TestStack;
/** Fault injector: when set, each settle waits for it (the file is moved meanwhile). */
let slowSettle: (() => Promise<void>) | undefined;

beforeAll(async () => {
  stack = await createTestStack({
    files: ORIGINAL,
    buyers: 4,
    wrapFacilitator: (real) => ({
      ...real,
      verify: (r) => real.verify(r),
      settle: async (r) => {
        await slowSettle?.();
        return real.settle(r);
      },
      supported: () => real.supported(),
    }),
  });
});
afterAll(async () => {
  await stack?.stop();
});

const path = (name: string) => join(stack.settings.contentDir, name);
const url = (name: string) => `${stack.url}/x402/cid/${stack.cids[name]}`;
const buyer = (i: number) => privateKeyToAccount(stack.devnet.buyers[i].privateKey);
const proof = (i: number) =>
  signProof({
    version: 2,
    account: buyer(i),
    asset: stack.devnet.token,
    payTo: stack.devnet.seller.address,
    amount: "10000",
  });
const settledRows = (cid: string) =>
  stack.db.sqlite.query("SELECT id FROM payments WHERE cid = ? AND state = 'settled'").all(cid).length;
const entitlementsOf = (payer: string) =>
  stack.db.sqlite.query("SELECT id FROM entitlements WHERE lower(payer) = lower(?)").all(payer).length;

/** Runs `move` while the settle of a request is held, then lets the settle go on. */
async function payWhile(i: number, name: string, move: () => void) {
  let started!: () => void;
  const settling = new Promise<void>((r) => (started = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  slowSettle = () => (started(), released);
  try {
    const p = await proof(i);
    const response = fetch(url(name), { headers: { "PAYMENT-SIGNATURE": p.header } });
    await settling;
    move();
    release();
    return { res: await response, proof: p };
  } finally {
    slowSettle = undefined;
  }
}

describe("a file rewritten with the same size and mtime (touch -d)", () => {
  test("is not sold under its old CID: no charge, 404; the index then sells it under its new one", async () => {
    const name = "touched.txt";
    const before = statSync(path(name));
    const other = ORIGINAL[name].replace("one", "two");
    expect(other.length).toBe(ORIGINAL[name].length);
    writeFileSync(path(name), other);
    utimesSync(path(name), before.atimeMs / 1000, before.mtimeMs / 1000); // touch -d: same size, same mtime
    expect(Math.trunc(statSync(path(name)).mtimeMs)).toBe(Math.trunc(before.mtimeMs)); // what the index compares

    const payer = buyer(0).address;
    const balance = await stack.balanceOf(payer);
    const res = await fetch(url(name), { headers: { "PAYMENT-SIGNATURE": (await proof(0)).header } });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(await stack.balanceOf(payer)).toBe(balance);
    expect(stack.db.sqlite.query("SELECT id FROM payments").all().length).toBe(0);

    const changes = await stack.stores.content.index();
    expect(changes.changed).toEqual([name]);
    const row = stack.db.sqlite
      .query<{ cid: string }, [string]>("SELECT cid FROM content_files WHERE path = ?")
      .get(name);
    expect(row?.cid).not.toBe(stack.cids[name]);
  });
});

describe("a file moved while its payment settles (slow-facilitator fault injector)", () => {
  test("deleted: still served as paid, byte for byte, from the handle opened before the charge", async () => {
    const name = "deleted.txt";
    const { res } = await payWhile(1, name, () => unlinkSync(path(name)));
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(ORIGINAL[name]);
    expect(res.headers.get("etag")).toBe(`"${stack.cids[name]}"`);
    expect(settledRows(stack.cids[name])).toBe(1);
  });

  test("renamed over by other bytes of the same size: the bytes paid for are served, not the new ones", async () => {
    const name = "renamed.txt";
    const { res } = await payWhile(2, name, () => {
      const temp = join(stack.settings.contentDir, ".renamed.txt.swp");
      writeFileSync(temp, ORIGINAL[name].toUpperCase());
      renameSync(temp, path(name));
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(ORIGINAL[name]);
    expect(res.headers.get("etag")).toBe(`"${stack.cids[name]}"`);
  });

  test("rewritten in place: JSON 503 with Retry-After, the purchase stands, and the same proof is served once the bytes are back", async () => {
    const name = "inplace.txt";
    const payer = buyer(3).address;
    const { res, proof: p } = await payWhile(3, name, () => writeFileSync(path(name), ORIGINAL[name].toUpperCase()));
    expect(res.status).toBe(503);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(res.headers.get("retry-after")).toBeTruthy();
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("file_changed");
    expect(JSON.stringify(body)).not.toContain(stack.settings.contentDir);
    // Charged once, and the entitlement is kept.
    expect(settledRows(stack.cids[name])).toBe(1);
    expect(entitlementsOf(payer)).toBe(1);

    writeFileSync(path(name), ORIGINAL[name]); // the old bytes again (new ctime: re-hashed, same CID)
    const again = await fetch(url(name), { headers: { "PAYMENT-SIGNATURE": p.header } });
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(ORIGINAL[name]);
    expect(settledRows(stack.cids[name])).toBe(1); // not charged twice
  });
});
