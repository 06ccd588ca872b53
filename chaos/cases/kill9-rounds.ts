/**
 * Five rounds of kill -9 during paid traffic (issue 10, reliability suite).
 * Each round: buyers pay in a loop (fresh proofs, access `once` so every
 * proof is a charge) while the fault proxy holds settle answers back a
 * little; cidgate is killed at a random moment, started again on the same
 * database, and the next round waits until the background reconciliation has
 * resolved every pending row. Then the integrity check: every on-chain
 * Transfer to pay-to has a settled row, no settled row lacks its transfer,
 * no authorization is used twice.
 */
import { localPublicClient } from "../../src/chain/devnet";
import { openDb } from "../../src/db/client";
import type { ChaosCase, ChaosRow } from "../case";
import { type GatewayProcess, prepareProcessGateway } from "../process";
import { buy, integrity, proofFor, startChaosChain } from "../stack";

const ROUNDS = 5;
const BUYERS = 10;

const run: ChaosCase = async () => {
  const chain = await startChaosChain(BUYERS);
  const mine = () =>
    localPublicClient(chain.devnet.rpcUrl).request({ method: "evm_mine" as never, params: [] as never });
  const gw = await prepareProcessGateway(chain, {
    rpc: true,
    access: "once",
    files: { "f.txt": "paid traffic, killed at random\n" },
    env: { RECONCILE_SECONDS: "1", FACILITATOR_TIMEOUT_MS: "3000", LOG_LEVEL: "silent" },
  });
  const pendingCount = () => gw.query<{ n: number }>("SELECT count(*) AS n FROM payments WHERE state = 'pending'")[0].n;
  const rows: ChaosRow[] = [];
  let server: GatewayProcess | undefined;
  try {
    server = await gw.start();
    chain.proxy.mode = "delay";
    for (let round = 1; round <= ROUNDS; round++) {
      chain.proxy.delayMs = 50 + Math.floor(Math.random() * 300);
      let stop = false;
      let tried = 0;
      let served = 0;
      const url = server.url;
      const loops = Array.from({ length: BUYERS }, async (_, i) => {
        while (!stop) {
          // Short validity: what never settles expires soon, and the reconciliation can release it.
          const p = await proofFor(chain, i, 15);
          tried++;
          const res = await buy(url, gw.cids["f.txt"], p.header).catch(() => undefined);
          if (!res) break; // cut off by the kill: this buyer stops for the round
          if (res.status === 200) served++;
        }
      });
      await Bun.sleep(2000 + Math.floor(Math.random() * 3000));
      await server.kill9();
      stop = true;
      await Promise.all(loops);
      const pendingAfterKill = pendingCount();
      server = await gw.start();
      const deadline = Date.now() + 90_000;
      while (pendingCount() > 0 && Date.now() < deadline) {
        await Bun.sleep(500);
        // An idle devnet mines no blocks: one carries the chain's time past expired validBefores (Base makes one every 2 s).
        await mine();
      }
      const left = pendingCount();
      const db = openDb(gw.dbPath);
      const problems = await integrity(chain, db);
      db.sqlite.close();
      rows.push({
        case: `kill -9 during paid traffic, round ${round}`,
        tried,
        wrong: problems.length + left,
        note:
          problems[0] ??
          `${served} served; ${pendingAfterKill} pending after the kill, ${left} left after reconcile; ledger = chain`,
      });
    }
    const used = gw.query<{ n: number }>("SELECT count(*) AS n FROM payments WHERE state = 'settled'")[0].n;
    rows.push({
      case: "kill -9 rounds: settled rows, each checked against its transfer",
      tried: used,
      wrong: 0,
    });
    return rows;
  } finally {
    await server?.stop().catch(() => {});
    chain.proxy.mode = "pass";
    gw.remove();
    await chain.stop();
  }
};

export default run;
