/**
 * Issue 10, item 11: no RPC, and settle answers are lost (`drop`: the money
 * moved) or the settle never left (`blackhole`). The buyer cannot be served
 * on the facilitator's word alone; an operator resolves each row through
 * POST /v3/x402/payments/{id}/resolve (settle with the transaction they
 * found, or release), the action is recorded, and the buyer's same proof is
 * then served, charged exactly once.
 */
import { createToken } from "../../src/http/auth";
import type { ChaosCase, ChaosRow } from "../case";
import type { FaultMode } from "../fault-proxy";
import {
  buy,
  buyerOf,
  CHAOS_JWT_SECRET,
  integrity,
  proofFor,
  rowOf,
  startChaosChain,
  startChaosGateway,
} from "../stack";

const BUYERS = 8;
const FILE = "resolved by the operator\n";

const run: ChaosCase = async () => {
  const chain = await startChaosChain(BUYERS);
  const gw = await startChaosGateway(chain, {
    rpc: false,
    files: { "f.txt": FILE },
    env: { FACILITATOR_TIMEOUT_MS: "1000" },
  });
  const token = await createToken(CHAOS_JWT_SECRET, { scopes: ["read", "write"], ttlSeconds: 600, subject: "chaos" });
  try {
    const rows: ChaosRow[] = [];
    const plans: [FaultMode, "settle" | "release", string][] = [
      ["drop", "settle", "no RPC, answer lost after the settle: operator settles with the tx"],
      ["blackhole", "release", "no RPC, settle never sent: operator releases"],
    ];
    for (const [index, [mode, action, name]] of plans.entries()) {
      const row: ChaosRow = { case: name, tried: 0, wrong: 0 };
      for (let k = 0; k < BUYERS / 2; k++) {
        const i = index * (BUYERS / 2) + k;
        row.tried++;
        const p = await proofFor(chain, i);
        const settledBefore = chain.proxy.settled.length;
        chain.proxy.mode = mode;
        const first = await buy(gw.url, gw.cids["f.txt"], p.header);
        chain.proxy.mode = "pass";
        const tx = chain.proxy.settled[settledBefore];
        const pending = rowOf(gw.db, buyerOf(chain, i).address, p.nonce);
        if (first.status === 200 || first.text.includes(FILE) || pending?.state !== "pending") {
          row.wrong++;
          continue;
        }
        const res = await fetch(`${gw.url}/v3/x402/payments/${pending.id}/resolve`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify(action === "settle" ? { action, transaction: tx } : { action }),
        });
        const audit = gw.db.sqlite
          .query<{ n: number }, [number]>("SELECT count(*) AS n FROM payment_resolutions WHERE payment_id = ?")
          .get(pending.id)!.n;
        const again = await buy(gw.url, gw.cids["f.txt"], p.header);
        const final = rowOf(gw.db, buyerOf(chain, i).address, p.nonce);
        if (
          res.status !== 200 ||
          audit !== 1 ||
          again.status !== 200 ||
          again.text !== FILE ||
          final?.state !== "settled"
        )
          row.wrong++;
      }
      rows.push(row);
    }
    const problems = await integrity(chain, gw.db);
    rows.push({
      case: "no RPC, operator resolve: ledger vs chain",
      tried: 1,
      wrong: problems.length,
      note: problems[0],
    });
    return rows;
  } finally {
    await gw.stop();
    await chain.stop();
  }
};

export default run;
