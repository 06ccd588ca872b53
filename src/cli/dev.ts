/**
 * `cidgate dev`: a complete local shop in one command, for a first look and
 * for trying pricing changes: a local chain (anvil, chain id 84532 =
 * base-sepolia) with test USDC and funded buyers, the built-in facilitator
 * settling on it, and the server with config/ and content/, the pricing's
 * ${PAY_TO} being a devnet seller. It prints the start-up summary and a
 * buyer command that pays (`npx cidgate buy ...`).
 *
 * Its state lives in one folder, data/dev/ (`--dir`): the database, the JWT
 * secret and buyers.json, the funded buyers' keys that `cidgate buy --devnet`
 * reads. Nothing outlives it: the chain, and so every payment on it, is gone
 * at Ctrl-C, and the folder with it. `.env` settings that would point
 * elsewhere (FACILITATOR_URL, RPC_URL, PUBLIC_URL, HOST, the database) are
 * overridden for this process only.
 */
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import pkg from "../../package.json";
import { loadSettingsOrReport } from "../settings";
import { defineCommand, UsageError } from "./command";
import { writeDevnetFile } from "./devnet-file";
import { tokenCreateCommand } from "./token-hint";

/** Whether a process is there (signal 0 only asks). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const command = defineCommand({
  name: "dev",
  summary: "a whole local shop: a local chain, the built-in facilitator and the server, with a buyer command that pays",
  options: {
    port: {
      type: "string",
      value: "<port>",
      description: "the server's port on 127.0.0.1 (default PORT, or 4021; 0: any free port)",
    },
    dir: {
      type: "string",
      value: "<dir>",
      description:
        "its state: database, JWT secret, buyers.json for `cidgate buy --devnet` (default data/dev; removed at exit)",
    },
  },
  notes:
    "Prices come from CIDGATE_CONFIG_DIR (config/), files from CIDGATE_CONTENT_DIR (content/).\n" +
    "Ctrl-C stops the server and the chain; the state folder goes with them.",
  async run({ values, who }) {
    const port = values.port ?? process.env.PORT ?? "4021";
    if (!/^\d+$/.test(port) || Number(port) > 65535)
      throw new UsageError(`--port: a whole number from 0 to 65535 (got "${port}")`);
    const dataDir = values.dir ?? "data/dev";
    const out = join(dataDir, "buyers.json");
    // The server, the chain and the checks load when run, not for `cidgate --help`.
    const [{ forSaleIn }, { startDevnet }, { startServer }, { preflight }, { refusesToStart }, { startupSummary }] =
      await Promise.all([
        import("../catalog/listing"),
        import("../chain/devnet"),
        import("../server"),
        import("../startup/preflight"),
        import("../startup/refuse"),
        import("../startup/summary"),
      ]);
    try {
      // A folder left by a run that was killed describes a chain that is gone; one whose chain runs is another `dev`'s.
      const pid = JSON.parse(readFileSync(out, "utf8")).pid;
      if (typeof pid === "number" && alive(pid)) {
        console.error(`${who}: another cidgate dev is running with ${dataDir} (anvil ${pid}); stop it, or give --dir`);
        return 1;
      }
    } catch {
      // no buyers.json: nobody is using the folder
    }
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });

    let devnet: Awaited<ReturnType<typeof startDevnet>>;
    try {
      devnet = await startDevnet({ buyers: 3 });
    } catch (e) {
      console.error(`${who}: the local chain did not start: ${(e as Error).message}`);
      return 1;
    }
    const cleanup = async () => {
      await devnet.stop();
      rmSync(dataDir, { recursive: true, force: true });
    };

    // This process's environment: the pricing reads ${PAY_TO} from it, as under `npm start`.
    Object.assign(process.env, {
      PORT: port,
      HOST: "127.0.0.1",
      CIDGATE_DB: join(dataDir, "cidgate.db"),
      CIDGATE_DATA_DIR: dataDir,
      FACILITATOR_URL: "local",
      FACILITATOR_NETWORKS: "base-sepolia",
      RPC_URL: devnet.rpcUrl,
      RELAYER_PRIVATE_KEY: devnet.relayer.privateKey,
      USDC_ADDRESS_BASE_SEPOLIA: devnet.token,
      PAY_TO: devnet.seller.address,
    });
    delete process.env.PUBLIC_URL;
    delete process.env.JWT_SECRET;

    const settings = loadSettingsOrReport(who);
    if (!settings) {
      await cleanup();
      return 2;
    }
    const checked = await preflight(settings);
    if (refusesToStart(who, checked)) {
      await cleanup();
      return 1;
    }
    let running: Awaited<ReturnType<typeof startServer>>;
    try {
      running = await startServer({ settings });
    } catch (e) {
      console.error(`${who}: cannot listen on 127.0.0.1:${port}: ${(e as Error).message} (try --port 0)`);
      await cleanup();
      return 1;
    }

    writeDevnetFile(out, devnet, { shop: running.publicUrl });

    const forSale = await forSaleIn(running.db, running.contentDb);
    console.log(
      startupSummary({
        version: pkg.version,
        url: running.url,
        publicUrl: running.publicUrl,
        settings,
        preflight: checked,
        forSale,
      }),
    );
    console.log(`\nlocal chain ${devnet.rpcUrl} (chain ${devnet.chainId}), test USDC ${devnet.token}`);
    console.log(`seller (PAY_TO) ${devnet.seller.address}; buyers with 1000 test USDC each in ${out}`);
    console.log(`its sales: CIDGATE_DB=${settings.db} npx cidgate payments`);
    // Its own database and secret (data/dev/): a token made for the usual CIDGATE_DB is refused here.
    console.log(`dashboard token: ${tokenCreateCommand(settings, "--scope read")}`);
    // The cheapest file that is there: the one to try first.
    const first = forSale
      .filter((f) => f.path !== undefined)
      .sort((a, b) => Number(BigInt(a.units ?? "0") - BigInt(b.units ?? "0")))[0];
    if (first) {
      console.log("\nbuy it, from another terminal:");
      console.log(
        `  npx cidgate buy ${running.publicUrl}/x402/cid/${first.cid} --devnet ${out} --out ${basename(first.path!)}`,
      );
    }
    console.log("\nCtrl-C stops the shop and the chain.");

    return new Promise<number>((resolve) => {
      let stopping = false;
      const stop = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        console.log(`\n${who}: ${signal}, stopping`);
        await running.stop(false);
        await cleanup();
        resolve(0);
      };
      process.on("SIGINT", () => void stop("SIGINT"));
      process.on("SIGTERM", () => void stop("SIGTERM"));
      process.on("SIGHUP", () => void stop("SIGHUP"));
    });
  },
});
