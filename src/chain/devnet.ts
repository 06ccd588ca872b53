/**
 * A real chain on one machine: anvil from npm (@foundry-rs/anvil-linux-amd64)
 * on a free loopback port, chain id 84532 (so EIP-712 signatures match the
 * `base-sepolia` network name), the EIP-3009 test token from dev/ deployed,
 * and buyers funded with test USDC.
 *
 *   const devnet = await startDevnet();   // each call: its own anvil
 *   ...
 *   await devnet.stop();
 *
 * No orphaned anvil, ever: anvil runs under a tiny `sh` watchdog in its own
 * process group whose stdin is a pipe from this process. When this process
 * exits for any reason (even SIGKILL) the pipe closes, the watchdog's `read`
 * returns and it kills anvil. stop() and an exit hook kill the group too.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Subprocess } from "bun";
import {
  type Address,
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  type Hex,
  http,
  type PublicClient,
  parseEther,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import multicallArtifact from "../../dev/artifacts/Multicall3.json";
import usdcArtifact from "../../dev/artifacts/USDC.json";

/** Where Base and Base Sepolia (and most chains) have Multicall3; the devnet mirrors it. */
export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11";

export interface DevnetAccount {
  address: Address;
  privateKey: Hex;
}

export interface DevnetOptions {
  /** Number of funded buyer accounts (default 3). */
  buyers?: number;
  /** Test USDC minted to each buyer, smallest unit (default 1000 USDC = 1_000_000_000n). */
  buyerUsdc?: bigint;
  /** Chain id (default 84532, Base Sepolia's, which the `base-sepolia` EIP-712 domain needs). */
  chainId?: number;
  /** Port on 127.0.0.1 (default 0: a free one). */
  port?: number;
  /** Receives anvil's output lines (default: dropped). */
  onLog?: (line: string) => void;
  /** Bound on anvil start, ms (default 15000). */
  startTimeoutMs?: number;
}

export interface Devnet {
  rpcUrl: string;
  chainId: number;
  /** Address of the deployed EIP-3009 test token (name USDC, version 2, 6 decimals). */
  token: Address;
  buyers: DevnetAccount[];
  /** Pays gas for settlements (the facilitator's key). */
  relayer: DevnetAccount;
  /** Receives payments (the `pay_to` of instructions). */
  seller: DevnetAccount;
  /** Deployed the token; the only account allowed to mint. */
  deployer: DevnetAccount;
  /** Process id of anvil itself (tests use it to check nothing is orphaned). */
  pid: number;
  /** Mints test USDC (smallest unit) to an address. */
  mint(to: Address, amount: bigint): Promise<void>;
  /** Stops anvil and waits until it is gone. Idempotent. */
  stop(): Promise<void>;
}

const DEFAULT_BUYER_USDC = 1_000_000_000n; // 1000 USDC

/** Path of the anvil binary shipped by @foundry-rs/anvil's platform package. */
export function anvilBinary(): string {
  const require = createRequire(import.meta.url);
  const pkg = `@foundry-rs/anvil-${process.platform}-${process.arch === "x64" ? "amd64" : process.arch}`;
  let dir: string;
  try {
    dir = dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    throw new Error(`anvil not installed: npm package ${pkg} is missing (npm ci installs it)`);
  }
  const bin = join(dir, "bin", "anvil");
  if (!existsSync(bin)) throw new Error(`anvil not found at ${bin}`);
  return bin;
}

// The watchdog (POSIX sh): anvil in the background and its pid on stdout; a
// reader blocked on our stdin pipe (kept as fd 3: background jobs get
// /dev/null as stdin) kills anvil at EOF, which comes when this process ends
// for any reason or calls stop(). The shell itself ends when anvil does, so a
// failed start is seen at once; a signal to the shell kills anvil too.
const WATCHDOG = [
  "exec 3<&0",
  '"$@" </dev/null 3<&- 2>&1 & a=$!',
  'echo "anvil-pid $a"',
  "{ read _ <&3; kill $a 2>/dev/null; } & w=$!",
  "trap 'kill $a 2>/dev/null' INT TERM HUP",
  "wait $a; wait $a 2>/dev/null", // a trapped signal interrupts the first wait
  "kill $w 2>/dev/null",
].join("\n");

const live = new Set<Subprocess>();
let exitHookInstalled = false;
function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Synchronous last resort on a normal exit; the stdin pipe covers the rest.
  process.on("exit", () => {
    for (const p of live) killGroup(p.pid, "SIGKILL");
  });
}

function killGroup(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Starts anvil on loopback and resolves once it listens; returns its RPC URL and pid. */
async function spawnAnvil(opts: Required<Pick<DevnetOptions, "chainId" | "port" | "startTimeoutMs">> & DevnetOptions) {
  const args = [
    anvilBinary(),
    "--host",
    "127.0.0.1",
    "--port",
    String(opts.port),
    "--chain-id",
    String(opts.chainId),
    "--accounts",
    "0", // our accounts are fresh random keys, funded below
    "--threads",
    "1",
    "--color",
    "never",
  ];
  installExitHook();
  const proc = Bun.spawn(["sh", "-c", WATCHDOG, "cidgate-devnet", ...args], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    detached: true, // own process group: a terminal's Ctrl-C reaches us, and we decide
  });
  live.add(proc);
  proc.unref(); // a forgotten stop() must not keep a test process alive; the pipe still kills anvil
  proc.exited.then(() => live.delete(proc));

  let anvilPid = 0;
  let resolveReady!: (url: string) => void;
  let rejectReady!: (e: Error) => void;
  const ready = new Promise<string>((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  // Anvil's last lines before it listens: the explanation when it does not (port taken, bad flag).
  const tail: string[] = [];
  let listening = false;

  // Drain stdout for the life of the process: a full pipe would block anvil.
  (async () => {
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl).trimEnd();
        buffered = buffered.slice(nl + 1);
        opts.onLog?.(line);
        if (!listening) {
          tail.push(line);
          if (tail.length > 20) tail.shift();
        }
        const pidMatch = /^anvil-pid (\d+)$/.exec(line);
        if (pidMatch) anvilPid = Number(pidMatch[1]);
        const listen = /^Listening on ([\d.]+):(\d+)$/.exec(line);
        if (listen) {
          listening = true;
          resolveReady(`http://${listen[1]}:${listen[2]}`);
        }
      }
    }
    rejectReady(new Error(`anvil exited before listening:\n${tail.join("\n")}`));
  })().catch((e) => rejectReady(e));
  (async () => {
    for await (const _ of proc.stderr as ReadableStream<Uint8Array>) {
      // the watchdog itself is silent; drained only so it can never block
    }
  })().catch(() => {});

  const timer = setTimeout(
    () => rejectReady(new Error(`anvil did not listen within ${opts.startTimeoutMs} ms`)),
    opts.startTimeoutMs,
  );
  let rpcUrl: string;
  try {
    rpcUrl = await ready;
  } catch (e) {
    await stopProcess(proc, anvilPid);
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return { proc, rpcUrl, anvilPid };
}

async function stopProcess(proc: Subprocess, anvilPid: number) {
  if (proc.exitCode === null && proc.signalCode === null) {
    try {
      (proc.stdin as import("bun").FileSink).end(); // EOF: the watchdog kills anvil and waits for it
    } catch {
      killGroup(proc.pid, "SIGTERM");
    }
    const gone = await Promise.race([proc.exited.then(() => true), Bun.sleep(3000).then(() => false)]);
    if (!gone) killGroup(proc.pid, "SIGKILL");
  }
  await proc.exited;
  // The group may still hold anvil if the watchdog was killed alone; make sure.
  if (anvilPid && isAlive(anvilPid)) {
    killGroup(proc.pid, "SIGKILL");
    try {
      process.kill(anvilPid, "SIGKILL");
    } catch {}
    for (let i = 0; i < 100 && isAlive(anvilPid); i++) await Bun.sleep(10);
  }
  live.delete(proc);
}

function account(privateKey: Hex = generatePrivateKey()): DevnetAccount {
  return { privateKey, address: privateKeyToAccount(privateKey).address };
}

/** A public client tuned for a local chain: receipts polled every few ms, not every 4 s. */
export function localPublicClient(rpcUrl: string): PublicClient {
  return createPublicClient({ transport: http(rpcUrl, { timeout: 10_000 }), pollingInterval: 5 });
}

/** A viem chain object for a devnet (wallet clients need one to send transactions). */
export function devnetChain(rpcUrl: string, chainId = 84532) {
  return defineChain({
    id: chainId,
    name: "cidgate-devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

/**
 * Starts a fresh local chain with the test token deployed and buyers funded.
 * Each call starts its own anvil on a free loopback port.
 */
export async function startDevnet(options: DevnetOptions = {}): Promise<Devnet> {
  const chainId = options.chainId ?? 84532;
  const { proc, rpcUrl, anvilPid } = await spawnAnvil({
    ...options,
    chainId,
    port: options.port ?? 0,
    startTimeoutMs: options.startTimeoutMs ?? 15_000,
  });
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= stopProcess(proc, anvilPid));

  try {
    const deployer = account();
    const relayer = account();
    const seller = account();
    const buyers = Array.from({ length: options.buyers ?? 3 }, () => account());
    const client = localPublicClient(rpcUrl);
    // anvil's own methods are not in viem's public RPC schema: asked through the untyped transport.
    const anvilRequest = (method: string, params: unknown[]) =>
      (client.request as (args: { method: string; params: unknown[] }) => Promise<unknown>)({ method, params });

    // Gas money for everyone (buyers too: a buyer may cancel an authorization),
    // and Multicall3 where real chains have it (viem and @x402/evm rely on it).
    await Promise.all([
      ...[deployer, relayer, seller, ...buyers].map((a) =>
        anvilRequest("anvil_setBalance", [a.address, `0x${parseEther("1000").toString(16)}`]),
      ),
      anvilRequest("anvil_setCode", [MULTICALL3_ADDRESS, multicallArtifact.deployedBytecode]),
    ]);

    const chain = devnetChain(rpcUrl, chainId);
    const wallet = createWalletClient({
      account: privateKeyToAccount(deployer.privateKey),
      chain,
      transport: http(rpcUrl, { timeout: 10_000 }),
    });
    const deployHash = await wallet.deployContract({
      abi: usdcArtifact.abi,
      bytecode: usdcArtifact.bytecode as Hex,
    });
    const deployReceipt = await client.waitForTransactionReceipt({ hash: deployHash, timeout: 10_000 });
    if (deployReceipt.status !== "success" || !deployReceipt.contractAddress) {
      throw new Error("deploying the test token failed");
    }
    const token = getAddress(deployReceipt.contractAddress);

    const mint = async (to: Address, amount: bigint) => {
      const hash = await wallet.writeContract({
        address: token,
        abi: usdcArtifact.abi,
        functionName: "mint",
        args: [to, amount],
      });
      const receipt = await client.waitForTransactionReceipt({ hash, timeout: 10_000 });
      if (receipt.status !== "success") throw new Error(`minting to ${to} failed`);
    };
    for (const b of buyers) await mint(b.address, options.buyerUsdc ?? DEFAULT_BUYER_USDC);

    return { rpcUrl, chainId, token, buyers, relayer, seller, deployer, pid: anvilPid, mint, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
