/**
 * The dashboard's RPC health (src/dashboard/health.ts) on a real devnet: it
 * asks every RPC the ledger reads (src/chain/rpc-choice.ts), not RPC_URL
 * alone, and a network's own RPC on another chain is down.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Devnet, startDevnet } from "../../src/chain/devnet";
import { createHealth } from "../../src/dashboard/health";
import { createLocalFacilitator } from "../../src/facilitator/local";

let devnet: Devnet;
beforeAll(async () => {
  devnet = await startDevnet({ buyers: 0 });
}, 60_000);
afterAll(async () => {
  await devnet?.stop();
});

function health(rpc: { rpcUrl?: string; rpcUrlBase?: string; rpcUrlBaseSepolia?: string }) {
  const facilitator = createLocalFacilitator({
    rpcUrl: devnet.rpcUrl,
    relayerPrivateKey: devnet.relayer.privateKey,
    settings: { receiptTimeoutSeconds: 30, facilitatorNetworks: ["base-sepolia"] },
  });
  return createHealth({ facilitator, settings: { facilitatorUrl: "local", rpcUrl: undefined, ...rpc } });
}

describe("dashboard RPC health", () => {
  test("RPC_URL_BASE_SEPOLIA alone is asked: ok, its chain and block", async () => {
    const { rpc } = await health({ rpcUrlBaseSepolia: devnet.rpcUrl }).read();
    expect(rpc.state).toBe("ok");
    expect(rpc.detail).toMatch(/^base-sepolia, block \d+$/);
  });

  test("RPC_URL_BASE on base-sepolia's chain is down, naming both", async () => {
    const { rpc } = await health({ rpcUrl: devnet.rpcUrl, rpcUrlBase: devnet.rpcUrl }).read();
    expect(rpc.state).toBe("down");
    expect(rpc.detail).toBe(`RPC_URL_BASE is chain ${devnet.chainId}, not base`);
  });

  test("the facilitator's networks are named once each (v1 and v2 kinds name the same network two ways)", async () => {
    const { facilitator } = await health({}).read();
    expect(facilitator.state).toBe("ok");
    expect(facilitator.detail).toBe("built-in; networks: base-sepolia");
  });

  test("none set: not configured", async () => {
    expect((await health({}).read()).rpc.state).toBe("not_configured");
  });
});
