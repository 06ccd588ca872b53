/**
 * A whole cidgate on one machine, nothing mocked: a fresh anvil chain with the
 * EIP-3009 test token (startDevnet), the in-process facilitator settling on it
 * with the relayer key, and the production server (src/server.ts) on a free
 * loopback port with
 * files indexed and priced. The demo and the gateway benchmark mirror this.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { erc20Abi } from "viem";
import { type Devnet, localPublicClient, startDevnet } from "../../src/chain/devnet";
import { openDb } from "../../src/db/client";
import { createLocalFacilitator } from "../../src/facilitator/local";
import type { Facilitator } from "../../src/facilitator/types";
import { createLogger } from "../../src/http/logging";
import { startServer } from "../../src/server";
import { loadSettings } from "../../src/settings";
import { createStores } from "../../src/stores";

export const STACK_JWT_SECRET = "stack-secret-stack-secret-stack-secret-01";

export interface StackOptions {
  /** name -> bytes, written to the content folder and indexed. */
  files: Record<string, string | Uint8Array>;
  /** Price of every file, USDC smallest unit (default 10000 = $0.01). */
  amount?: string;
  buyers?: number;
  env?: Record<string, string>;
  /** Pricing files (name -> YAML) written to the config folder; given, the server loads and watches them. */
  config?: Record<string, string>;
  /** Background reconciliation (default off: tests look at pending rows; they call `reconciler.runOnce()`). */
  reconcile?: boolean;
  /** Wraps the real facilitator (to count calls or inject a fault). */
  wrapFacilitator?: (real: Facilitator) => Facilitator;
  /** A database file in the stack's folder (`settings.db`) instead of `:memory:`: for another process (a CLI) to open. */
  dbFile?: boolean;
  /** The server's `shutdownGraceMs` (server.ts). */
  shutdownGraceMs?: number;
}

export async function createTestStack(options: StackOptions) {
  const devnet: Devnet = await startDevnet({ buyers: options.buyers ?? 3 });
  const dir = mkdtempSync(join(tmpdir(), "cidgate-stack-"));
  try {
    const settings = loadSettings({
      CIDGATE_DB: options.dbFile ? join(dir, "cidgate.db") : ":memory:",
      HOST: "127.0.0.1",
      PORT: "0",
      CIDGATE_CONTENT_DIR: join(dir, "content"),
      CIDGATE_CONFIG_DIR: join(dir, "config"),
      USDC_ADDRESS_BASE_SEPOLIA: devnet.token,
      FACILITATOR_URL: "local",
      RPC_URL: devnet.rpcUrl,
      RELAYER_PRIVATE_KEY: devnet.relayer.privateKey,
      FACILITATOR_TIMEOUT_MS: "20000",
      ...options.env,
    });
    const real = createLocalFacilitator({
      rpcUrl: devnet.rpcUrl,
      relayerPrivateKey: devnet.relayer.privateKey,
      settings,
    });
    const facilitator = options.wrapFacilitator ? options.wrapFacilitator(real) : real;
    const db = openDb(settings.db);

    mkdirSync(settings.contentDir, { recursive: true });
    mkdirSync(settings.configDir, { recursive: true });
    for (const [name, yaml] of Object.entries(options.config ?? {}))
      writeFileSync(join(settings.configDir, name), yaml);
    for (const [name, bytes] of Object.entries(options.files)) writeFileSync(join(settings.contentDir, name), bytes);
    const stores = createStores(db, settings);
    await stores.content.index();
    const instruction = stores.instructions.create({
      name: "Access fee",
      description: "Access fee",
      requirements: [
        {
          network: "base-sepolia",
          asset: devnet.token,
          pay_to: devnet.seller.address,
          amount: options.amount ?? "10000",
        },
      ],
    });
    const cids: Record<string, string> = {};
    for (const name of Object.keys(options.files)) {
      const row = db.sqlite.query<{ cid: string }, [string]>("SELECT cid FROM content_files WHERE path = ?").get(name);
      if (!row) throw new Error(`${name} was not indexed`);
      cids[name] = row.cid;
      stores.instructions.attachCid(instruction.id, row.cid);
    }

    // The production server (src/server.ts): Bun's router for the gateway, the request log, the limits.
    const running = await startServer({
      settings,
      db,
      stores,
      log: createLogger("silent"),
      jwtSecret: STACK_JWT_SECRET,
      facilitator,
      pricing: options.config !== undefined,
      shutdownGraceMs: options.shutdownGraceMs,
      reconcile: options.reconcile ?? false,
    });
    const { url, app } = running;

    const chain = localPublicClient(devnet.rpcUrl);
    const balanceOf = (address: `0x${string}`) =>
      chain.readContract({ address: devnet.token, abi: erc20Abi, functionName: "balanceOf", args: [address] });

    return {
      url,
      app,
      /** The running server (its webhook dispatcher, its stats). */
      server: running,
      db,
      /** The app's stores: write through these so its catalog sees the change at once. */
      stores,
      settings,
      devnet,
      facilitator,
      /** Offer and proof counters, reports and metrics (src/stats/service.ts). */
      stats: running.stats,
      reconciler: running.reconciler,
      instruction,
      cids,
      balanceOf,
      async stop() {
        await running.stop(true);
        real.close();
        db.sqlite.close();
        await devnet.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

export type TestStack = Awaited<ReturnType<typeof createTestStack>>;
