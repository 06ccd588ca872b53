/**
 * Self-hosted facilitator latency on a local chain: verify and settle p50/p99
 * over 300 real payments (EIP-3009 authorizations signed by funded buyers,
 * half v1 and half v2), one at a time, then 300 settlements 20 at a time.
 *
 *   bun run bench:facilitator            (npx bun bench/facilitator.ts)
 *
 * anvil is pinned to CPU 0 and this process to CPU 1 when taskset exists.
 * Targets (issue 3): verify p50 < 3 ms, settle p50 < 20 ms.
 */
import { startDevnet } from "../src/chain/devnet";
import { createLocalFacilitator } from "../src/facilitator/local";
import { payment } from "../test/facilitator/helpers";

const N = Number(process.env.BENCH_PAYMENTS ?? 300);
const CONCURRENCY = 20;

function pin(pid: number, cpu: number) {
  try {
    Bun.spawnSync(["taskset", "-cp", String(cpu), String(pid)], { stdout: "ignore", stderr: "ignore" });
  } catch {
    // no taskset: unpinned figures
  }
}

function percentile(sorted: number[], p: number) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function report(name: string, ms: number[]) {
  const s = [...ms].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  console.log(
    `${name.padEnd(28)} n=${s.length}  p50 ${percentile(s, 50).toFixed(2)} ms  p99 ${percentile(s, 99).toFixed(2)} ms  mean ${mean.toFixed(2)} ms  max ${s[s.length - 1].toFixed(2)} ms`,
  );
}

const devnet = await startDevnet({ buyers: 10, buyerUsdc: 10_000_000_000n });
pin(devnet.pid, 0);
pin(process.pid, 1);
try {
  const facilitator = createLocalFacilitator({
    rpcUrl: devnet.rpcUrl,
    relayerPrivateKey: devnet.relayer.privateKey,
    settings: { receiptTimeoutSeconds: 30, facilitatorNetworks: ["base-sepolia"] },
  });
  const make = (i: number) =>
    payment(devnet, {
      version: i % 2 ? 2 : 1,
      buyerKey: devnet.buyers[i % devnet.buyers.length].privateKey,
      sign: { validBefore: BigInt(Math.floor(Date.now() / 1000) + 3600) },
    });
  const requests = await Promise.all(Array.from({ length: N }, (_, i) => make(i)));

  // Warm-up: first calls pay for chain-id lookup, JIT and connection setup.
  for (const r of await Promise.all(Array.from({ length: 10 }, (_, i) => make(i)))) {
    await facilitator.verify(r);
    await facilitator.settle(r);
  }

  const verifyMs: number[] = [];
  for (const r of requests) {
    const t = performance.now();
    const v = await facilitator.verify(r);
    verifyMs.push(performance.now() - t);
    if (!v.isValid) throw new Error(`verify failed: ${v.invalidReason}`);
  }
  const settleMs: number[] = [];
  for (const r of requests) {
    const t = performance.now();
    const s = await facilitator.settle(r);
    settleMs.push(performance.now() - t);
    if (!s.success) throw new Error(`settle failed: ${s.errorReason}`);
  }

  const more = await Promise.all(Array.from({ length: N }, (_, i) => make(i)));
  const concurrentMs: number[] = [];
  const started = performance.now();
  for (let i = 0; i < more.length; i += CONCURRENCY) {
    await Promise.all(
      more.slice(i, i + CONCURRENCY).map(async (r) => {
        const t = performance.now();
        const s = await facilitator.settle(r);
        concurrentMs.push(performance.now() - t);
        if (!s.success) throw new Error(`settle failed: ${s.errorReason}`);
      }),
    );
  }
  const wall = (performance.now() - started) / 1000;

  console.log(`facilitator on anvil ${devnet.rpcUrl} (chain ${devnet.chainId}), ${N} payments, v1+v2 mixed`);
  report("verify (sequential)", verifyMs);
  report("settle (sequential)", settleMs);
  report(`settle (${CONCURRENCY} concurrent)`, concurrentMs);
  console.log(`settle throughput at ${CONCURRENCY} concurrent: ${(N / wall).toFixed(0)} settlements/s`);
} finally {
  await devnet.stop();
}
