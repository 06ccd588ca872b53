/**
 * What the offer page hands its script (a JSON block in the page, no extra
 * request): the v2 requirements exactly as the 402 carries them, plus what
 * a wallet needs per network. Shared by page.ts (server) and client/ (browser).
 */
export interface OfferNetwork {
  /** The v2 requirement, sent back as `accepted` in PAYMENT-SIGNATURE. */
  accepted: {
    scheme: string;
    network: string;
    amount: string;
    asset: string;
    payTo: string;
    maxTimeoutSeconds?: number;
    extra?: Record<string, unknown>;
  };
  chainId: number;
  label: string;
  rpcUrl: string;
  explorer: string;
  /** "0.01" (USDC, 6 decimals). */
  usdc: string;
}

export interface OfferData {
  resource: { url: string; description: string; mimeType: string };
  /** The gateway path of the file (same origin as the page). */
  path: string;
  fileName: string;
  /** Bytes: the paying request asks for the first one only (an empty file: no Range). */
  size: number;
  accepts: OfferNetwork[];
  /**
   * False when a payment grants no later access (`access: once`): the paying
   * request would be the only download, and the page never takes the file
   * into a script, so it does not offer to pay.
   */
  browserCanBuy: boolean;
}
