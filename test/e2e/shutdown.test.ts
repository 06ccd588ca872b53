/**
 * Stopping (what SIGTERM does, src/index.ts): a settlement in flight when the
 * server is told to stop finishes and is served, and the server stops after
 * it; past a (here, tiny) grace the connection is cut and the payment is left
 * pending, claimed, for recovery to resolve: never failed, never lost.
 * The facilitator is the real one, held at settle by a gate (a fault
 * injected to make "in flight" last).
 */
import { expect, test } from "bun:test";
import { createSigner, wrapFetchWithPayment } from "x402-fetch";
import type { Facilitator } from "../../src/facilitator/types";
import { eventually } from "../support/eventually";
import { createTestStack } from "./stack";

function gatedSettle() {
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  let settling = 0;
  const wrap = (real: Facilitator): Facilitator => ({
    ...real,
    async settle(request) {
      settling++;
      await gate;
      return real.settle(request);
    },
  });
  return { wrap, release, settling: () => settling };
}

const payments = (stack: Awaited<ReturnType<typeof createTestStack>>) =>
  stack.db.sqlite.query<{ state: string; tx_hash: string | null }, []>("SELECT state, tx_hash FROM payments").all();

test("a settlement in flight at stop finishes, is served, and the server stops after it", async () => {
  const gate = gatedSettle();
  const stack = await createTestStack({ files: { "a.txt": "drained\n" }, wrapFacilitator: gate.wrap });
  try {
    const pay = wrapFetchWithPayment(
      fetch,
      (await createSigner("base-sepolia", stack.devnet.buyers[0].privateKey)) as never,
    );
    const response = pay(`${stack.url}/x402/cid/${stack.cids["a.txt"]}`);
    await eventually(() => gate.settling() === 1, "the settle call reached the facilitator");
    let stopped = false;
    const stopping = stack.server.stop(false).then(() => {
      stopped = true;
    });
    await Bun.sleep(50);
    expect(stopped).toBe(false); // still waiting for the settlement
    gate.release();
    const res = await response;
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("drained\n");
    await stopping;
    expect(payments(stack)).toEqual([{ state: "settled", tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) }]);
    // and it no longer accepts connections
    await expect(fetch(`${stack.url}/healthz`)).rejects.toThrow();
  } finally {
    gate.release();
    await stack.stop();
  }
}, 120_000);

test("past the grace the connection is cut and the payment stays pending (claimed, resolvable), not failed", async () => {
  const gate = gatedSettle();
  const stack = await createTestStack({
    files: { "b.txt": "cut\n" },
    wrapFacilitator: gate.wrap,
    shutdownGraceMs: 200,
  });
  try {
    const pay = wrapFetchWithPayment(
      fetch,
      (await createSigner("base-sepolia", stack.devnet.buyers[0].privateKey)) as never,
    );
    const response = pay(`${stack.url}/x402/cid/${stack.cids["b.txt"]}`).then(
      (r) => r.status,
      () => "connection closed",
    );
    await eventually(() => gate.settling() === 1, "the settle call reached the facilitator");
    await stack.server.stop(false);
    expect(await response).toBe("connection closed");
    expect(payments(stack)).toEqual([{ state: "pending", tx_hash: null }]);
  } finally {
    gate.release();
    await stack.stop();
  }
}, 120_000);
