/**
 * The settlement receipt a paid response carries: X-PAYMENT-RESPONSE for v1
 * clients, PAYMENT-RESPONSE for v2, both base64 JSON of
 * {success, transaction, network, payer} (network in the client's spelling).
 */
import { NETWORKS, type NetworkName } from "../chain/networks";
import { encodeHeader } from "./requirements";

export interface Receipt {
  success: true;
  transaction: string;
  network: string;
  payer: string;
}

export function buildReceipt(x402Version: 1 | 2, network: NetworkName, transaction: string, payer: string): Receipt {
  return { success: true, transaction, network: x402Version === 2 ? NETWORKS[network].caip2 : network, payer };
}

/** Header name and value for the receipt of a proof of this version. */
export function receiptHeader(x402Version: 1 | 2, receipt: Receipt): [name: string, value: string] {
  return [x402Version === 2 ? "PAYMENT-RESPONSE" : "X-PAYMENT-RESPONSE", encodeHeader(receipt)];
}
