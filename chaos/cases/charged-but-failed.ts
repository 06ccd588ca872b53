/**
 * Issue 10, item 2: the facilitator settles on chain, then answers a failure
 * (`invalid_transaction_state` with the real hash, or HTTP 400
 * `unexpected_settle_error`). With RPC_URL the chain shows the payment: the
 * buyer must be served, the row settled with its entitlement, never released.
 */
import type { ChaosCase, ChaosRow } from "../case";
import type { FaultMode } from "../fault-proxy";
import { buy, buyerOf, integrity, proofFor, rowOf, startChaosChain, startChaosGateway } from "../stack";

const BUYERS = 10;
const FILE = "charged, so served\n";

const run: ChaosCase = async () => {
  const chain = await startChaosChain(BUYERS);
  const gw = await startChaosGateway(chain, { rpc: true, files: { "f.txt": FILE } });
  try {
    const rows: ChaosRow[] = [];
    const modes: [FaultMode, string][] = [
      ["failAfterSettle", "charged, then success:false invalid_transaction_state + real tx"],
      ["http400AfterSettle", "charged, then HTTP 400 unexpected_settle_error"],
    ];
    for (const [index, [mode, name]] of modes.entries()) {
      const row: ChaosRow = { case: name, tried: 0, wrong: 0 };
      for (let k = 0; k < BUYERS / 2; k++) {
        const i = index * (BUYERS / 2) + k;
        const p = await proofFor(chain, i);
        chain.proxy.mode = mode;
        const res = await buy(gw.url, gw.cids["f.txt"], p.header);
        chain.proxy.mode = "pass";
        row.tried++;
        const payer = buyerOf(chain, i).address;
        const stored = rowOf(gw.db, payer, p.nonce);
        const entitled = gw.db.sqlite
          .query<{ n: number }, [string]>("SELECT count(*) AS n FROM entitlements WHERE payer = ?")
          .get(payer)!.n;
        if (res.status !== 200 || res.text !== FILE || stored?.state !== "settled" || entitled !== 1) row.wrong++;
      }
      rows.push(row);
    }
    const problems = await integrity(chain, gw.db);
    rows.push({ case: "charged-but-failed: ledger vs chain", tried: 1, wrong: problems.length, note: problems[0] });
    return rows;
  } finally {
    await gw.stop();
    await chain.stop();
  }
};

export default run;
