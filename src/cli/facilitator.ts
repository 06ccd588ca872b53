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
import { defineCommand, UsageError } from "./command";

export const command = defineCommand({
  name: "facilitator",
  summary: "run the self-hosted x402 facilitator on its own port (POST /verify, /settle, GET /supported)",
  options: {
    port: { type: "string", value: "<port>", description: "listen port (overrides FACILITATOR_PORT, default 4022)" },
    devnet: {
      type: "string",
      value: "<file>",
      description: "take RPC_URL and the relayer key from a running `cidgate devnet` (its file: data/devnet.json)",
    },
  },
  notes:
    "settings: RPC_URL, RELAYER_PRIVATE_KEY (both required), FACILITATOR_NETWORKS (base-sepolia),\n" +
    "          FACILITATOR_PORT (4022), HOST (127.0.0.1), RECEIPT_TIMEOUT_SECONDS (30)",
  async run({ values, who }) {
    const env: Record<string, string | undefined> = { ...process.env };
    if (values.devnet !== undefined) {
      try {
        const d = JSON.parse(readFileSync(values.devnet, "utf8"));
        env.RPC_URL ||= d.rpcUrl;
        env.RELAYER_PRIVATE_KEY ||= d.relayer?.privateKey;
      } catch {
        console.error(`${who}: cannot read ${values.devnet} (is \`cidgate devnet\` running?)`);
        return 2;
      }
    }
    if (values.port !== undefined) {
      if (!/^\d+$/.test(values.port) || Number(values.port) > 65535) {
        throw new UsageError(`--port: a whole number from 0 to 65535 (got "${values.port}")`);
      }
      env.FACILITATOR_PORT = values.port;
    }

    const needed = "by `cidgate facilitator`";
    const settings = loadSettingsOrReport(who, env, [(s) => selfHostedFacilitatorIssues(s, needed)]);
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
          `${who}: RPC_URL is chain ${chainId} (${networkByChainId(chainId) ?? "unknown"}), ` +
            `but FACILITATOR_NETWORKS is ${settings.facilitatorNetworks.join(",")}`,
        );
        return 2;
      }
    } catch (e) {
      if (!(e instanceof FacilitatorUnavailableError)) throw e;
      console.error(`${who}: warning: ${e.message}; will retry on each request`);
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
      console.error(`${who}: cannot listen on ${settings.host}:${settings.facilitatorPort}: ${(e as Error).message}`);
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
  },
});
