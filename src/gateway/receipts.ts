/**
 * The settlement receipt a paid response carries: X-PAYMENT-RESPONSE for v1
 * clients, PAYMENT-RESPONSE for v2, both base64 JSON of
 * {success, transaction, network, payer} (network in the client's spelling).
 */
import { NETWORKS, type NetworkName } from "../chain/networks";
import { encodeHeader, receiptHeaderName } from "../x402/headers";
import type { Receipt, X402Version } from "../x402/models";

export type { Receipt };

export function buildReceipt(
  x402Version: X402Version,
  network: NetworkName,
  transaction: string,
  payer: string,
): Receipt {
  return { success: true, transaction, network: x402Version === 2 ? NETWORKS[network].caip2 : network, payer };
}

/** Header name and value for the receipt of a proof of this version. */
export function receiptHeader(x402Version: X402Version, receipt: Receipt): [name: string, value: string] {
  return [receiptHeaderName(x402Version), encodeHeader(receipt)];
}
