/**
 * `cidgate devnet`: a local chain for trying cidgate with real payments and no
 * internet. Starts anvil (chain id 84532, so signatures match `base-sepolia`),
 * deploys the EIP-3009 test USDC, funds buyers, prints what scripts need and
 * writes it as JSON (default data/devnet.json). Ctrl-C stops anvil and removes
 * the file, which describes a chain that no longer exists.
 */
import { rmSync } from "node:fs";
import { startDevnet } from "../chain/devnet";
import { defineCommand, UsageError } from "./command";
import { writeDevnetFile } from "./devnet-file";

function wholeNumber(raw: string | undefined, name: string, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > max)
    throw new UsageError(`--${name}: a whole number up to ${max} (got "${raw}")`);
  return Number(raw);
}

export const command = defineCommand({
  name: "devnet",
  summary: "run a local chain (anvil) with test USDC and funded buyers, for trying payments offline",
  options: {
    out: {
      type: "string",
      value: "<file>",
      description: "where to write the devnet's JSON (RPC URL, chain id, token, keys); default data/devnet.json",
    },
    port: { type: "string", value: "<port>", description: "RPC port on 127.0.0.1 (0: any free port); default 8545" },
    buyers: { type: "string", value: "<n>", description: "funded buyer accounts; default 3" },
    usdc: { type: "string", value: "<n>", description: "test USDC per buyer, in whole USDC; default 1000" },
  },
  notes: "Ctrl-C stops the chain and removes the JSON file.",
  async run({ values, who }) {
    const out = values.out ?? "data/devnet.json";
    const port = wholeNumber(values.port, "port", 8545, 65535);
    const buyers = wholeNumber(values.buyers, "buyers", 3, 100);
    const usdc = wholeNumber(values.usdc, "usdc", 1000, 1_000_000_000);

    let devnet: Awaited<ReturnType<typeof startDevnet>>;
    try {
      devnet = await startDevnet({ port, buyers, buyerUsdc: BigInt(usdc) * 1_000_000n });
    } catch (e) {
      console.error(`${who}: ${(e as Error).message}${port ? ` (is port ${port} taken? try --port 0)` : ""}`);
      return 1;
    }

    writeDevnetFile(out, devnet, { relayer: devnet.relayer });

    console.log(`devnet: anvil on ${devnet.rpcUrl}, chain id ${devnet.chainId} (base-sepolia)`);
    console.log(`token:  USDC (EIP-3009, 6 decimals) at ${devnet.token}`);
    for (const [i, b] of devnet.buyers.entries())
      console.log(`buyer ${i}: ${b.address} (${usdc} USDC) key ${b.privateKey}`);
    console.log(`seller:  ${devnet.seller.address}`);
    console.log(`relayer: ${devnet.relayer.address} key ${devnet.relayer.privateKey}`);
    console.log(`wrote ${out}`);
    console.log(
      `\nfor cidgate (.env):\nFACILITATOR_URL=local\nRPC_URL=${devnet.rpcUrl}\nRELAYER_PRIVATE_KEY=${devnet.relayer.privateKey}\nUSDC_ADDRESS_BASE_SEPOLIA=${devnet.token}\n`,
    );
    console.log("Ctrl-C stops the chain.");

    // Nothing else holds the event loop open (anvil's handle is unref'd on purpose).
    const keepAlive = setInterval(() => {}, 1 << 30);
    return new Promise<number>((resolve) => {
      let stopping = false;
      const stop = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        console.log(`\ndevnet: ${signal}, stopping anvil`);
        clearInterval(keepAlive);
        await devnet.stop();
        rmSync(out, { force: true });
        resolve(0);
      };
      process.on("SIGINT", () => void stop("SIGINT"));
      process.on("SIGTERM", () => void stop("SIGTERM"));
      process.on("SIGHUP", () => void stop("SIGHUP"));
    });
  },
});
