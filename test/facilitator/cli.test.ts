import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { alive } from "../support/process";

const root = join(import.meta.dir, "../..");
const dir = mkdtempSync(join(tmpdir(), "cidgate-cli-"));
const spawned: Subprocess[] = [];
afterAll(() => {
  for (const p of spawned) p.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

function cidgate(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawn(["node_modules/.bin/bun", "src/cli/main.ts", ...args], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  spawned.push(p);
  return p;
}

async function readUntil(p: Subprocess, pattern: RegExp, ms = 10_000): Promise<RegExpMatchArray> {
  const reader = (p.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  const until = Date.now() + ms;
  try {
    while (Date.now() < until) {
      const m = text.match(pattern);
      if (m) return m;
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
  } finally {
    reader.releaseLock();
  }
  throw new Error(`no ${pattern} in output:\n${text}\n${await new Response(p.stderr as ReadableStream).text()}`);
}

test("`cidgate devnet` writes its JSON, `cidgate facilitator --devnet` serves on it, Ctrl-C stops both cleanly", async () => {
  const out = join(dir, "devnet.json");
  const devnet = cidgate(["devnet", "--port", "0", "--buyers", "2", "--out", out]);
  await readUntil(devnet, /Ctrl-C stops the chain/);
  const d = JSON.parse(readFileSync(out, "utf8"));
  expect(d).toMatchObject({ chainId: 84532, network: "base-sepolia" });
  expect(d.rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(d.token).toMatch(/^0x[0-9a-fA-F]{40}$/);
  expect(d.buyers).toHaveLength(2);
  expect(d.buyers[0].privateKey).toMatch(/^0x[0-9a-f]{64}$/);
  expect(d.relayer.privateKey).toMatch(/^0x[0-9a-f]{64}$/);
  expect(d.seller.address).toMatch(/^0x[0-9a-fA-F]{40}$/);

  const facilitator = cidgate(["facilitator", "--devnet", out], {
    FACILITATOR_PORT: "0",
    RPC_URL: "",
    RELAYER_PRIVATE_KEY: "",
  });
  const [, url] = await readUntil(facilitator, /listening on (http:\/\/[\d.:]+)/);
  const supported = (await (await fetch(`${url}/supported`)).json()) as any;
  expect(supported.kinds).toContainEqual({ x402Version: 2, scheme: "exact", network: "eip155:84532" });
  expect(supported.signers["eip155:*"]).toEqual([d.relayer.address]);

  facilitator.kill("SIGINT");
  expect(await facilitator.exited).toBe(0);

  expect(alive(d.pid)).toBe(true);
  devnet.kill("SIGINT");
  expect(await devnet.exited).toBe(0);
  expect(existsSync(out)).toBe(false);
  expect(alive(d.pid)).toBe(false);
  expect(await fetch(d.rpcUrl, { method: "POST", body: "{}" }).catch(() => "down")).toBe("down");
});

test("`cidgate facilitator` without RPC_URL names the missing setting", async () => {
  const p = cidgate(["facilitator"], { RPC_URL: "", RELAYER_PRIVATE_KEY: "", FACILITATOR_URL: "" });
  expect(await p.exited).toBe(2);
  // Both missing settings at once, one line each.
  expect(await new Response(p.stderr as ReadableStream).text()).toBe(
    "cidgate facilitator: bad setting RPC_URL: required by `cidgate facilitator` (the chain to settle on)\n" +
      "cidgate facilitator: bad setting RELAYER_PRIVATE_KEY: required by `cidgate facilitator` (the key that pays gas)\n",
  );
});
