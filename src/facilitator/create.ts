/**
 * The facilitator the gateway uses, from settings: FACILITATOR_URL=local runs
 * the self-hosted one in this process (RPC_URL + RELAYER_PRIVATE_KEY, no
 * third party); any URL is an x402 facilitator reached over HTTP (x402.org,
 * Coinbase CDP with CDP_API_KEY_ID/SECRET, or `cidgate facilitator`).
 */
import { requireSelfHostedFacilitator, type Settings } from "../settings";
import type { SettlementLog } from "./chain-settler";
import { createHttpFacilitator } from "./client";
import { createLocalFacilitator } from "./local";
import type { Facilitator } from "./types";

/** `log` receives the self-hosted facilitator's settlement warnings (optional). */
export function createFacilitator(settings: Settings, log?: SettlementLog): Facilitator {
  if (settings.facilitatorUrl === "local") {
    // loadSettings already insists on both; checked again for callers that build Settings by hand.
    requireSelfHostedFacilitator(settings, "when FACILITATOR_URL=local");
    return createLocalFacilitator({
      rpcUrl: settings.rpcUrl,
      relayerPrivateKey: settings.relayerPrivateKey,
      settings,
      // One RPC request never takes the whole budget of a facilitator call.
      rpcTimeoutMs: Math.min(10_000, settings.facilitatorTimeoutMs),
      log,
    });
  }
  const cdp =
    settings.cdpApiKeyId && settings.cdpApiKeySecret
      ? { apiKeyId: settings.cdpApiKeyId, apiKeySecret: settings.cdpApiKeySecret }
      : undefined;
  return createHttpFacilitator({ url: settings.facilitatorUrl, timeoutMs: settings.facilitatorTimeoutMs, cdp });
}
