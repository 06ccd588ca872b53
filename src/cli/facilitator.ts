/**
 * `cidgate facilitator`: the self-hosted x402 facilitator on its own port
 * (POST /verify, POST /settle, GET /supported), for any x402 resource server,
 * cidgate included (FACILITATOR_URL=http://127.0.0.1:4022).
 *
 * Settings: RPC_URL, RELAYER_PRIVATE_KEY, FACILITATOR_NETWORKS (default
 * base-sepolia), FACILITATOR_PORT (4022), HOST, RECEIPT_TIMEOUT_SECONDS.
 * `--devnet data/devnet.json` takes RPC_URL and the relayer key from a
 * running `cidgate devnet` instead.
 */
import { readFileSync } from "node:fs";
import { Elysia } from "elysia";
import { NETWORKS, networkByChainId } from "../chain/networks";
import { createLocalFacilitator } from "../facilitator/local";
import { facilitatorModule } from "../facilitator/routes";
import { FacilitatorUnavailableError } from "../facilitator/types";
import { errors } from "../http/errors";
import { createLogger, withRequestLog } from "../http/logging";
import { loadSettingsOrReport, requireSelfHostedFacilitator, selfHostedFacilitatorIssues } from "../settings";
import { parseOptions } from "./args";

const USAGE = `usage: cidgate facilitator [--port 4022] [--devnet data/devnet.json]
  settings: RPC_URL, RELAYER_PRIVATE_KEY, FACILITATOR_NETWORKS (base-sepolia), FACILITATOR_PORT (4022),
            HOST (127.0.0.1), RECEIPT_TIMEOUT_SECONDS (30)`;

export async function run(args: string[]): Promise<number> {
  if (args.includes("--help") || args[0] === "help") {
    console.log(USAGE);
    return 0;
  }
  // Other arguments have always been ignored here.
  const parsed = parseOptions(args, { port: "string", devnet: "string" });
  const env: Record<string, string | undefined> = { ...process.env };
  const devnetFile = parsed.values.devnet;
  if (devnetFile !== undefined) {
    try {
      const d = JSON.parse(readFileSync(devnetFile || "data/devnet.json", "utf8"));
      env.RPC_URL ||= d.rpcUrl;
      env.RELAYER_PRIVATE_KEY ||= d.relayer?.privateKey;
    } catch {
      console.error(`cidgate facilitator: cannot read ${devnetFile || "data/devnet.json"} (is \`cidgate devnet\` running?)`);
      return 2;
    }
  }
  const port = parsed.values.port;
  if (port !== undefined) env.FACILITATOR_PORT = port;

  const needed = "by `cidgate facilitator`";
  const settings = loadSettingsOrReport("cidgate facilitator", env, [(s) => selfHostedFacilitatorIssues(s, needed)]);
  if (!settings) return 2;
  requireSelfHostedFacilitator(settings, needed); // cannot fail after the rule above; tells the types so

  const log = createLogger(settings.logLevel);
  const facilitator = createLocalFacilitator({
    rpcUrl: settings.rpcUrl,
    relayerPrivateKey: settings.relayerPrivateKey,
    settings,
    rpcTimeoutMs: Math.min(10_000, settings.facilitatorTimeoutMs),
    log,
  });
  // Say at once when the RPC is on another chain than the networks served: every payment would fail.
  try {
    const chainId = await facilitator.chainId();
    const served: number[] = settings.facilitatorNetworks.map((n) => NETWORKS[n].chainId);
    if (!served.includes(chainId)) {
      console.error(
        `cidgate facilitator: RPC_URL is chain ${chainId} (${networkByChainId(chainId) ?? "unknown"}), ` +
          `but FACILITATOR_NETWORKS is ${settings.facilitatorNetworks.join(",")}`,
      );
      return 2;
    }
  } catch (e) {
    if (!(e instanceof FacilitatorUnavailableError)) throw e;
    console.error(`cidgate facilitator: warning: ${e.message}; will retry on each request`);
  }

  const app = new Elysia().use(errors).use(facilitatorModule(facilitator));
  let server: ReturnType<typeof Bun.serve>;
  try {
    server = Bun.serve({
      port: settings.facilitatorPort,
      hostname: settings.host,
      maxRequestBodySize: 64 * 1024,
      idleTimeout: 30,
      development: false,
      fetch: withRequestLog(app.fetch, log),
    });
  } catch (e) {
    console.error(`cidgate facilitator: cannot listen on ${settings.host}:${settings.facilitatorPort}: ${(e as Error).message}`);
    return 1;
  }
  console.log(
    `cidgate facilitator listening on http://${settings.host}:${server.port} ` +
      `(networks ${settings.facilitatorNetworks.join(",")}, relayer ${facilitator.relayerAddress})`,
  );

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = async () => {
      if (stopping) return;
      stopping = true;
      await server.stop(false); // let settlements in flight finish
      facilitator.close();
      resolve(0);
    };
    process.on("SIGINT", () => void stop());
    process.on("SIGTERM", () => void stop());
  });
}
