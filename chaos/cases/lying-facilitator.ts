/**
 * Issue 10, item 1: a facilitator answers settle `success:true` with a random
 * transaction and settles nothing. With RPC_URL the gateway checks the
 * receipt: nothing may be served, no row may read settled, and once honest
 * again the same proof pays once; a lied-about proof never presented again is
 * released by the reconciliation once it expires.
 */
import { localPublicClient } from "../../src/chain/devnet";
import type { ChaosCase, ChaosRow } from "../case";
import { buy, buyerOf, integrity, proofFor, rowOf, startChaosChain, startChaosGateway } from "../stack";

const BUYERS = 8;
const FILES = { "a.txt": "file a, sold\n", "b.txt": "file b, sold\n" };

const run: ChaosCase = async () => {
  const chain = await startChaosChain(BUYERS);
  const gw = await startChaosGateway(chain, { rpc: true, files: FILES });
  try {
    const lied = { case: "lying facilitator: success with a random tx", tried: 0, wrong: 0 } as ChaosRow;
    const honest = { case: "lying facilitator: same proof once honest", tried: 0, wrong: 0 } as ChaosRow;
    const proofs: { i: number; name: keyof typeof FILES; header: string; nonce: string }[] = [];
    for (let i = 0; i < BUYERS - 2; i++)
      for (const name of Object.keys(FILES) as (keyof typeof FILES)[]) {
        const p = await proofFor(chain, i);
        chain.proxy.mode = "lie";
        const res = await buy(gw.url, gw.cids[name], p.header);
        chain.proxy.mode = "pass";
        lied.tried++;
        const row = rowOf(gw.db, buyerOf(chain, i).address, p.nonce);
        const ok =
          res.status === 502 &&
          res.type.includes("application/json") &&
          !res.text.includes(FILES[name]) &&
          row?.state === "pending";
        if (!ok) lied.wrong++;
        proofs.push({ i, name, header: p.header, nonce: p.nonce });
      }
    for (const p of proofs) {
      honest.tried++;
      const res = await buy(gw.url, gw.cids[p.name], p.header);
      const row = rowOf(gw.db, buyerOf(chain, p.i).address, p.nonce);
      if (res.status !== 200 || res.text !== FILES[p.name] || row?.state !== "settled") honest.wrong++;
    }

    // Lied about and never presented again: released once expired, never settled.
    const expired = {
      case: "lying facilitator: abandoned proof released by reconcile",
      tried: 0,
      wrong: 0,
    } as ChaosRow;
    const abandoned: { i: number; nonce: string }[] = [];
    for (const i of [BUYERS - 2, BUYERS - 1]) {
      const p = await proofFor(chain, i, 12);
      chain.proxy.mode = "lie";
      await buy(gw.url, gw.cids["a.txt"], p.header);
      chain.proxy.mode = "pass";
      abandoned.push({ i, nonce: p.nonce });
    }
    const until = Date.now() + 60_000;
    for (;;) {
      await Bun.sleep(1000);
      await localPublicClient(chain.devnet.rpcUrl).request({ method: "evm_mine" as never, params: [] as never });
      await gw.running.reconciler.runOnce();
      const states = abandoned.map((a) => rowOf(gw.db, buyerOf(chain, a.i).address, a.nonce)?.state);
      if (states.every((s) => s !== "pending") || Date.now() > until) {
        expired.tried = states.length;
        expired.wrong = states.filter((s) => s !== "failed").length;
        break;
      }
    }
    const problems = await integrity(chain, gw.db);
    const check = { case: "lying facilitator: ledger vs chain", tried: 1, wrong: problems.length, note: problems[0] };
    return [lied, honest, expired, check];
  } finally {
    await gw.stop();
    await chain.stop();
  }
};

export default run;
