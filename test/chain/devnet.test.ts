import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createPublicClient, erc20Abi, http } from "viem";
import { type Devnet, startDevnet } from "../../src/chain/devnet";
import { alive, waitGone } from "../support/process";

describe("startDevnet", () => {
  let devnet: Devnet;
  beforeAll(async () => {
    devnet = await startDevnet({ buyers: 2 });
  });
  afterAll(() => devnet?.stop());

  test("anvil listens on loopback with chain id 84532", async () => {
    expect(devnet.rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const client = createPublicClient({ transport: http(devnet.rpcUrl) });
    expect(await client.getChainId()).toBe(84532);
  });

  test("the token is deployed with USDC's name, version and decimals", async () => {
    const client = createPublicClient({ transport: http(devnet.rpcUrl) });
    const abi = [
      ...erc20Abi,
      { type: "function", name: "version", stateMutability: "view", inputs: [], outputs: [{ type: "string" }] },
    ] as const;
    expect(await client.readContract({ address: devnet.token, abi, functionName: "name" })).toBe("USDC");
    expect(await client.readContract({ address: devnet.token, abi, functionName: "version" })).toBe("2");
    expect(await client.readContract({ address: devnet.token, abi, functionName: "decimals" })).toBe(6);
  });

  test("buyers hold 1000 test USDC each; seller and relayer are distinct accounts", async () => {
    const client = createPublicClient({ transport: http(devnet.rpcUrl) });
    expect(devnet.buyers).toHaveLength(2);
    for (const b of devnet.buyers) {
      expect(
        await client.readContract({
          address: devnet.token,
          abi: erc20Abi,
          functionName: "balanceOf",
          args: [b.address],
        }),
      ).toBe(1_000_000_000n);
    }
    const addresses = new Set([devnet.seller.address, devnet.relayer.address, ...devnet.buyers.map((b) => b.address)]);
    expect(addresses.size).toBe(4);
    expect(await client.getBalance({ address: devnet.relayer.address })).toBeGreaterThan(0n);
  });

  test("two devnets run side by side on different ports", async () => {
    const other = await startDevnet({ buyers: 1 });
    try {
      expect(other.rpcUrl).not.toBe(devnet.rpcUrl);
      expect(other.pid).not.toBe(devnet.pid);
    } finally {
      await other.stop();
    }
    expect(alive(other.pid)).toBe(false);
    expect(alive(devnet.pid)).toBe(true);
  });
});

describe("no orphaned anvil", () => {
  test("stop() kills anvil and the RPC stops answering", async () => {
    const d = await startDevnet({ buyers: 1 });
    expect(alive(d.pid)).toBe(true);
    await d.stop();
    expect(alive(d.pid)).toBe(false);
    await d.stop(); // idempotent
    const res = await fetch(d.rpcUrl, { method: "POST", body: "{}" }).catch(() => undefined);
    expect(res).toBeUndefined();
  });

  async function childWithDevnet() {
    const child = Bun.spawn(["node_modules/.bin/bun", join(import.meta.dir, "fixtures/devnet-child.ts")], {
      cwd: join(import.meta.dir, "../.."),
      stdout: "pipe",
      stderr: "inherit",
    });
    const reader = (child.stdout as ReadableStream<Uint8Array>).getReader();
    let text = "";
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("child exited early");
      text += new TextDecoder().decode(value);
    }
    const { pid } = JSON.parse(text.trim()) as { pid: number };
    expect(alive(pid)).toBe(true);
    return { child, pid };
  }

  test("anvil dies when its parent is SIGKILLed (no cleanup code runs)", async () => {
    const { child, pid } = await childWithDevnet();
    child.kill("SIGKILL");
    await child.exited;
    expect(await waitGone(pid)).toBe(true);
  });

  test("anvil dies when its parent gets SIGTERM", async () => {
    const { child, pid } = await childWithDevnet();
    child.kill("SIGTERM");
    await child.exited;
    expect(await waitGone(pid)).toBe(true);
  });
});
