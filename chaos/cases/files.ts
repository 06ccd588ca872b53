/**
 * Files that move (issue 10, items 4 and 5), on a devnet with the real
 * facilitator behind a fault injector, `slowSettle`, that holds each settle
 * while the case moves the file. Each try buys a file of its own:
 *
 *   - touch -d: rewritten with the same size and mtime before the purchase.
 *     Wrong: any charge, or any byte served under the old CID.
 *   - deleted, renamed over (an editor's atomic save, same size) and rewritten
 *     in place (same size) while the payment settles. Right: 200 with the
 *     bytes paid for under the old CID, or a JSON 503 with Retry-After with
 *     the payment and its entitlement kept. Wrong: anything else (other
 *     bytes, a 404 after a charge, a plain-text 500).
 */
import { renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { signProof } from "../../test/gateway/fixtures";
import type { ChaosCase, ChaosRow } from "../case";
import { createTestStack, isPlainServerError } from "../lib/stack";

const TRIES = Number(process.env.CHAOS_FILES ?? 10);
const KINDS = ["touch -d", "deleted during settle", "renamed over during settle", "rewritten in place during settle"];

const bytesOf = (kind: number, i: number) => `${KINDS[kind]} #${i}: ${"the bytes paid for ".repeat(20 + i)}\n`;

const files: ChaosCase = async () => {
  const content: Record<string, string> = {};
  for (let k = 0; k < KINDS.length; k++) for (let i = 0; i < TRIES; i++) content[`k${k}-${i}.txt`] = bytesOf(k, i);
  let slowSettle: (() => Promise<void>) | undefined;
  const stack = await createTestStack({
    files: content,
    buyers: 1,
    wrapFacilitator: (real) => ({
      ...real,
      settle: async (r) => {
        await slowSettle?.();
        return real.settle(r);
      },
    }),
  });
  const account = privateKeyToAccount(stack.devnet.buyers[0].privateKey);
  const path = (name: string) => join(stack.settings.contentDir, name);
  const settled = (cid: string) =>
    stack.db.sqlite.query("SELECT id FROM payments WHERE cid = ? AND state = 'settled'").all(cid).length;
  const entitled = (cid: string) =>
    stack.db.sqlite.query("SELECT id FROM entitlements WHERE cid = ? AND revoked_at IS NULL").all(cid).length;

  async function buy(name: string, duringSettle?: () => void) {
    const proof = await signProof({
      version: 2,
      account,
      asset: stack.devnet.token,
      payTo: stack.devnet.seller.address,
      amount: "10000",
    });
    let started!: () => void;
    const settling = new Promise<void>((r) => (started = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    slowSettle = duringSettle ? () => (started(), released) : undefined;
    try {
      const answer = fetch(`${stack.url}/x402/cid/${stack.cids[name]}`, {
        headers: { "PAYMENT-SIGNATURE": proof.header },
      });
      if (duringSettle) {
        await Promise.race([settling, answer]);
        duringSettle();
        release();
      }
      return await answer;
    } finally {
      slowSettle = undefined;
    }
  }

  try {
    const rows: ChaosRow[] = [];
    for (let k = 0; k < KINDS.length; k++) {
      let wrong = 0;
      let served = 0;
      let unavailable = 0;
      for (let i = 0; i < TRIES; i++) {
        const name = `k${k}-${i}.txt`;
        const cid = stack.cids[name];
        const original = bytesOf(k, i);
        const other = original.toUpperCase(); // same size, other bytes
        let res: Response;
        if (k === 0) {
          const s = statSync(path(name));
          writeFileSync(path(name), other);
          utimesSync(path(name), s.atimeMs / 1000, s.mtimeMs / 1000);
          res = await buy(name);
        } else if (k === 1) {
          res = await buy(name, () => unlinkSync(path(name)));
        } else if (k === 2) {
          res = await buy(name, () => {
            writeFileSync(path(`.${name}.swp`), other);
            renameSync(path(`.${name}.swp`), path(name));
          });
        } else {
          res = await buy(name, () => writeFileSync(path(name), other));
        }
        const plain = await isPlainServerError(res);
        const body = await res.text();
        const charged = settled(cid) > 0;
        if (res.status === 200) {
          served++;
          if (body !== original || res.headers.get("etag") !== `"${cid}"`) wrong++;
        } else if (res.status === 503 && !plain && res.headers.get("retry-after")) {
          unavailable++;
          if (!charged || entitled(cid) === 0) wrong++; // a 503 promises the purchase stands
        } else if (k === 0 && res.status === 404 && !charged) {
          // right: not sold under the old CID, nobody charged
        } else {
          wrong++;
        }
        if (k === 0 && charged) wrong++;
      }
      rows.push({
        case: `file ${KINDS[k]}`,
        tried: TRIES,
        wrong,
        note: `${served} served as paid, ${unavailable} JSON 503 with the purchase kept`,
      });
    }
    return rows;
  } finally {
    await stack.stop();
  }
};

export default files;
