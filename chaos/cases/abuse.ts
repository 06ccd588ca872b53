/**
 * Unfunded keys flooding the facilitator (issue 10, item 6), smaller than
 * bench:abuse: 1,000 correctly signed proofs from fresh, unfunded keys, all
 * from one client (X-Forwarded-For, TRUST_PROXY on), 32 at a time, while a
 * funded buyer at another address buys 5 files. Wrong: every facilitator call
 * past VERIFY_FAILURES_PER_MINUTE, every row left once the refused rows'
 * retention has passed, every 5xx, and every purchase of the buyer that is
 * not served.
 */
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { pruneRefusedRows, REFUSED_ROW_RETENTION_MS } from "../../src/ledger/prune";
import { signProof } from "../../test/gateway/fixtures";
import type { ChaosCase, ChaosRow } from "../case";
import { createTestStack } from "../lib/stack";

const FLOOD = Number(process.env.CHAOS_ABUSE ?? 1000);
const PURCHASES = 5;

const abuse: ChaosCase = async () => {
  const content: Record<string, string> = { "flooded.txt": "flooded\n" };
  for (let i = 0; i < PURCHASES; i++) content[`buy${i}.txt`] = `bought ${i}\n`;
  let floodCalls = 0;
  const stack = await createTestStack({
    files: content,
    buyers: 1,
    env: { TRUST_PROXY: "true" },
    wrapFacilitator: (real) => ({
      ...real,
      verify: (r) => {
        const from = (r.paymentPayload as { payload: { authorization: { from: string } } }).payload.authorization.from;
        if (from.toLowerCase() !== stack.devnet.buyers[0].address.toLowerCase()) floodCalls++;
        return real.verify(r);
      },
    }),
  });
  const sign = (key: `0x${string}`) =>
    signProof({
      version: 2,
      account: privateKeyToAccount(key),
      asset: stack.devnet.token,
      payTo: stack.devnet.seller.address,
      amount: "10000",
    });
  const get = async (name: string, header: string, client: string) => {
    const res = await fetch(`${stack.url}/x402/cid/${stack.cids[name]}`, {
      headers: { "PAYMENT-SIGNATURE": header, "X-Forwarded-For": client },
    });
    await res.arrayBuffer();
    return res.status;
  };
  try {
    const headers: string[] = [];
    for (let i = 0; i < FLOOD; i++) headers.push((await sign(generatePrivateKey())).header);
    let serverErrors = 0;
    let next = 0;
    const flood = Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < headers.length) {
          const status = await get("flooded.txt", headers[next++], "203.0.113.9");
          if (status >= 500) serverErrors++;
        }
      }),
    );
    let buyerWrong = 0;
    for (let i = 0; i < PURCHASES; i++) {
      const status = await get(`buy${i}.txt`, (await sign(stack.devnet.buyers[0].privateKey)).header, "192.0.2.44");
      if (status !== 200) buyerWrong++;
    }
    await flood;
    await pruneRefusedRows({
      payments: stack.stores.payments,
      now: () => Date.now() + REFUSED_ROW_RETENTION_MS + 1000,
    });
    const left = stack.db.sqlite
      .query<{ n: number }, [string]>("SELECT count(*) AS n FROM payments WHERE lower(payer) != lower(?)")
      .get(stack.devnet.buyers[0].address)!.n;
    const limit = stack.settings.verifyFailuresPerMinute;
    const rows: ChaosRow[] = [
      {
        case: "unfunded proofs from one client",
        tried: FLOOD,
        wrong: Math.max(0, floodCalls - limit) + left + serverErrors,
        note: `${floodCalls} facilitator calls (limit ${limit}), ${left} rows left after pruning, ${serverErrors} 5xx`,
      },
      { case: "funded buyer during the flood", tried: PURCHASES, wrong: buyerWrong },
    ];
    return rows;
  } finally {
    await stack.stop();
  }
};

export default abuse;
