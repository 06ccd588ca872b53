/**
 * Issue 10, item 3: cidgate is killed (-9) while settlements it sent are
 * landing (the fault proxy holds each settle answer back for a while, so the
 * money has moved and cidgate does not know yet). Started again on the same
 * database, nobody comes back: the background reconciliation must settle
 * every landed payment (with its entitlement) and release the rest, and the
 * ledger must agree with the chain.
 */

import { openDb } from "../../src/db/client";
import type { ChaosCase, ChaosRow } from "../case";
import { prepareProcessGateway } from "../process";
import { buy, integrity, proofFor, startChaosChain } from "../stack";

const BUYERS = 8;

const run: ChaosCase = async () => {
  const chain = await startChaosChain(BUYERS);
  const gw = await prepareProcessGateway(chain, {
    rpc: true,
    files: { "f.txt": "killed mid-settle\n" },
    env: { RECONCILE_SECONDS: "1", FACILITATOR_TIMEOUT_MS: "2000", LOG_LEVEL: "silent" },
  });
  try {
    let server = await gw.start();
    chain.proxy.mode = "delay";
    chain.proxy.delayMs = 1500;
    const before = chain.proxy.settled.length;
    const requests = Array.from({ length: BUYERS }, async (_, i) => {
      const p = await proofFor(chain, i);
      return buy(server.url, gw.cids["f.txt"], p.header).catch(() => undefined);
    });
    // Every settlement has landed on chain; their answers are still held back: kill.
    const until = Date.now() + 30_000;
    while (chain.proxy.settled.length - before < BUYERS && Date.now() < until) await Bun.sleep(20);
    await server.kill9();
    await Promise.all(requests);
    chain.proxy.mode = "pass";
    const landed = chain.proxy.settled.length - before;
    const pendingAfterKill = gw.query<{ n: number }>("SELECT count(*) AS n FROM payments WHERE state = 'pending'")[0].n;

    const restarted = Date.now();
    server = await gw.start();
    const deadline = Date.now() + 90_000;
    let pending = pendingAfterKill;
    while (pending > 0 && Date.now() < deadline) {
      await Bun.sleep(250);
      pending = gw.query<{ n: number }>("SELECT count(*) AS n FROM payments WHERE state = 'pending'")[0].n;
    }
    const resolvedIn = ((Date.now() - restarted) / 1000).toFixed(1);
    await server.stop();
    const settled = gw.query<{ n: number }>("SELECT count(*) AS n FROM payments WHERE state = 'settled'")[0].n;
    const entitled = gw.query<{ n: number }>("SELECT count(*) AS n FROM entitlements WHERE payment_id IS NOT NULL")[0]
      .n;
    const db = openDb(gw.dbPath);
    const problems = await integrity(chain, db);
    db.sqlite.close();
    const rows: ChaosRow[] = [
      {
        case: "kill -9 with settlements landing: resolved by background reconcile",
        tried: pendingAfterKill,
        wrong: pending + Math.abs(landed - settled) + Math.abs(settled - entitled),
        note: `${landed} landed, ${pendingAfterKill} pending after the kill, all resolved ${resolvedIn} s after restart `,
      },
      {
        case: "kill -9 with settlements landing: ledger vs chain",
        tried: 1,
        wrong: problems.length,
        note: problems[0],
      },
    ];
    return rows;
  } finally {
    gw.remove();
    await chain.stop();
  }
};

export default run;
