/**
 * `cidgate buy <url>`: a buyer, for trying a shop (yours or another x402
 * one) from a shell. It pays with x402-fetch, the x402 project's own client
 * from npm, exactly as any buyer's program would: GET, read the 402, sign an
 * EIP-3009 authorization with the buyer's key, GET again with it, save the
 * file. The key is BUYER_PRIVATE_KEY, or a funded buyer of a local chain
 * (`--devnet data/dev.json`, written by `cidgate dev`).
 *
 * x402-fetch is a dev dependency (installed by `npm install`): the server
 * never loads it, only this command does.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { usd } from "../money";
import { priceToAmount } from "../pricing/price";
import { signedAuthorization, wasCharged } from "./buy-charged";
import { defineCommand, UsageError } from "./command";

interface Offer {
  accepts?: { network?: string; maxAmountRequired?: string; payTo?: string; asset?: string }[];
}

/** The local chain's RPC from --devnet's file, else RPC_URL: where buy asks whether its payment was taken. */
function rpcUrlOf(values: { devnet?: string }): string | undefined {
  if (values.devnet !== undefined) {
    try {
      const url = JSON.parse(readFileSync(values.devnet, "utf8")).rpcUrl;
      if (typeof url === "string") return url;
    } catch {
      // buyerKey has said why the file is unreadable
    }
  }
  return process.env.RPC_URL || undefined;
}

function buyerKey(values: { devnet?: string; buyer?: string }, who: string): `0x${string}` | undefined {
  if (values.devnet !== undefined) {
    const index = values.buyer === undefined ? 0 : Number(values.buyer);
    if (!Number.isInteger(index) || index < 0) throw new UsageError(`--buyer: a whole number (got "${values.buyer}")`);
    let buyers: { privateKey: `0x${string}` }[];
    try {
      buyers = JSON.parse(readFileSync(values.devnet, "utf8")).buyers;
    } catch {
      console.error(`${who}: cannot read ${values.devnet} (is \`npx cidgate dev\` running?)`);
      return undefined;
    }
    if (!buyers?.[index]) {
      console.error(`${who}: ${values.devnet} has no buyer ${index}`);
      return undefined;
    }
    return buyers[index].privateKey;
  }
  const key = process.env.BUYER_PRIVATE_KEY;
  if (!key || !/^0x[0-9a-fA-F]{64}$/.test(key)) {
    console.error(
      `${who}: set BUYER_PRIVATE_KEY to the paying wallet's key (0x + 64 hex), or give --devnet <file> for a local chain's buyer`,
    );
    return undefined;
  }
  return key as `0x${string}`;
}

export const command = defineCommand({
  name: "buy",
  summary: "pay for a file with x402 and save it (a buyer, for trying a shop)",
  arguments: [{ name: "url", description: "the file's URL, e.g. http://127.0.0.1:4021/x402/cid/<cid>" }],
  options: {
    out: { type: "string", value: "<file>", description: "where to save the file (default: stdout)" },
    max: { type: "string", value: "<price>", description: 'the most to pay, e.g. "$0.50" (default $0.10)' },
    devnet: {
      type: "string",
      value: "<file>",
      description: "pay with a funded buyer of a local chain (the file `cidgate dev` or `cidgate devnet` writes)",
    },
    buyer: { type: "string", value: "<n>", description: "which buyer of --devnet (default 0)" },
  },
  notes:
    "Without --devnet the key is BUYER_PRIVATE_KEY. The price, the network and the transaction go to stderr;\n" +
    "a second buy of a file already paid for is served without a second charge.",
  async run({ values, positionals: [url], who }) {
    const max = priceToAmount(values.max ?? "$0.10");
    if ("error" in max) throw new UsageError(`--max: ${max.error}`);
    try {
      new URL(url);
    } catch {
      throw new UsageError(`${JSON.stringify(url)} is not a URL`);
    }
    const key = buyerKey(values, who);
    if (!key) return 2;

    const { createSigner, decodeXPaymentResponse, wrapFetchWithPayment } = await import("x402-fetch");
    let first: Response;
    try {
      first = await fetch(url);
    } catch (e) {
      console.error(`${who}: ${url}: ${(e as Error).message}`);
      return 1;
    }
    let response = first;
    /** The X-PAYMENT header x402-fetch sent, and where the offer asked to be paid. */
    let sent: string | undefined;
    let accepted: { network: string; asset?: string } | undefined;
    if (first.status === 402) {
      const offer = (await first.json().catch(() => ({}))) as Offer;
      const accept = offer.accepts?.[0];
      if (!accept?.network || !accept.maxAmountRequired) {
        console.error(`${who}: ${url} answered 402 without an x402 offer`);
        return 1;
      }
      console.error(`price: ${usd(accept.maxAmountRequired)} on ${accept.network} to ${accept.payTo}`);
      accepted = { network: accept.network, asset: accept.asset };
      const signer = await createSigner(accept.network as never, key);
      const recording = ((input: RequestInfo | URL, init?: RequestInit) => {
        sent = new Headers(init?.headers).get("x-payment") ?? sent;
        return fetch(input, init);
      }) as typeof fetch;
      const pay = wrapFetchWithPayment(recording, signer as never, BigInt(max.amount));
      try {
        response = await pay(url);
      } catch (e) {
        const message = (e as Error).message;
        console.error(
          `${who}: ${message.includes("exceeds maximum") ? `the price is above --max ${usd(max.amount)}` : message}`,
        );
        return 1;
      }
    }
    if (response.status !== 200) {
      console.error(`${who}: ${url} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
      return 1;
    }
    const receipt = response.headers.get("x-payment-response");
    if (receipt) {
      const r = decodeXPaymentResponse(receipt);
      const signed = sent === undefined ? undefined : signedAuthorization(sent);
      const charged =
        signed && accepted?.asset
          ? await wasCharged(accepted.network, accepted.asset as `0x${string}`, signed, rpcUrlOf(values))
          : undefined;
      console.error(
        charged === false
          ? `already paid (transaction ${r.transaction} on ${r.network}): not charged again`
          : `paid: transaction ${r.transaction} on ${r.network} (payer ${r.payer})`,
      );
    }
    const body = new Uint8Array(await response.arrayBuffer());
    if (values.out !== undefined) {
      writeFileSync(values.out, body);
      console.error(`saved ${body.length} bytes (${response.headers.get("content-type")}) to ${values.out}`);
    } else {
      process.stdout.write(body);
    }
    return 0;
  },
});
