/// <reference lib="dom" />
/**
 * The paywall page's script: pay with any injected wallet, or sign in as a
 * returning buyer, then NAVIGATE to the file's own URL. The paying request
 * leaves the access cookie (path of this CID) behind, so the navigation
 * gets the file from the gateway with its real name and type
 * (Content-Disposition): no blob: URL, no innerHTML, nothing of the paid
 * file ever passes through this script.
 *
 * Viem only for what it does best here: the EIP-712 JSON a wallet signs
 * (`serializeTypedData`), the sign-in message (`createSiweMessage`, the
 * same text the server checks) and hex helpers. Tree-shaken by Bun.build.
 */
import {
  type Address,
  bytesToHex,
  getAddress,
  type Hex,
  hexToBigInt,
  numberToHex,
  serializeTypedData,
  stringToHex,
} from "viem";
import { createSiweMessage } from "viem/siwe";
import { formatDollars, formatUnits } from "../format";
import type { OfferData, OfferNetwork } from "../offer-data";
import { call, errorCode, type Provider, UNKNOWN_CHAIN, USER_REJECTED, type WalletChoice, wallets } from "./wallet";

const $ = (id: string) => document.getElementById(id) as HTMLElement;
const offer = JSON.parse($("offer").textContent ?? "{}") as OfferData;
const payButton = $("pay") as HTMLButtonElement;
const signInButton = $("signin") as HTMLButtonElement;
const statusBox = $("status");
const stepsList = $("steps");
const walletBox = $("wallets");

type Step = "sign" | "settle" | "ready";
type Action = "pay" | "signin";

/** A signed payment not settled yet: sent again as is (never re-signed) after "facilitator unavailable". */
let pending: { header: string; validBefore: number; network: OfferNetwork } | undefined;
let busy = false;

// ---- what the buyer sees ------------------------------------------------------------------

function say(kind: "info" | "error" | "ok", title: string, text?: string, extra?: Node) {
  statusBox.replaceChildren();
  statusBox.dataset.kind = kind;
  const strong = document.createElement("strong");
  strong.textContent = title;
  statusBox.append(strong);
  if (text) {
    const p = document.createElement("p");
    p.textContent = text;
    statusBox.append(p);
  }
  if (extra) statusBox.append(extra);
}

function steps(active: Step | undefined, done: Step[] = []) {
  stepsList.hidden = active === undefined && done.length === 0;
  for (const li of stepsList.querySelectorAll("li")) {
    const step = li.dataset.step as Step;
    li.dataset.state = done.includes(step) ? "done" : step === active ? "active" : "";
  }
}

function link(href: string, text: string): HTMLAnchorElement {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  return a;
}

function setBusy(on: boolean) {
  busy = on;
  payButton.disabled = on;
  signInButton.disabled = on;
}

class Stop extends Error {
  constructor(
    readonly title: string,
    readonly text: string,
  ) {
    super(title);
  }
}

// ---- the wallet ---------------------------------------------------------------------------

/** One wallet: the only one, or the one the buyer picks from the list. */
function chooseWallet(): Promise<WalletChoice> {
  const found = wallets();
  if (found.length === 0)
    return Promise.reject(
      new Stop(
        "No wallet found in this browser",
        "Install a browser wallet that supports Base, such as MetaMask, Coinbase Wallet or Rabby, add USDC to it, then reload this page.",
      ),
    );
  if (found.length === 1) return Promise.resolve(found[0] as WalletChoice);
  return new Promise((resolve) => {
    walletBox.replaceChildren();
    walletBox.hidden = false;
    for (const w of found) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "secondary";
      if (w.icon?.startsWith("data:image/")) {
        const img = document.createElement("img");
        img.src = w.icon;
        img.alt = "";
        b.append(img);
      }
      b.append(w.name);
      b.addEventListener("click", () => {
        walletBox.hidden = true;
        resolve(w);
      });
      walletBox.append(b);
    }
    say("info", "Choose a wallet", "Several wallets are installed; pick the one that holds your USDC.");
    (walletBox.firstElementChild as HTMLElement | null)?.focus();
  });
}

async function connect(provider: Provider): Promise<Address> {
  let accounts: string[];
  try {
    accounts = await call(provider, "eth_requestAccounts");
  } catch (e) {
    if (errorCode(e) === USER_REJECTED)
      throw new Stop(
        "The wallet did not connect",
        "You declined the connection. Nothing was charged; press the button again to retry.",
      );
    throw e;
  }
  const first = accounts[0];
  if (!first)
    throw new Stop("No account in the wallet", "Unlock your wallet or create an account in it, then try again.");
  return getAddress(first);
}

/** The requirement for the wallet's current network when the offer has one, else the first (switched to). */
async function onNetwork(provider: Provider): Promise<OfferNetwork> {
  const current = Number(await call(provider, "eth_chainId"));
  const match = offer.accepts.find((a) => a.chainId === current);
  if (match) return match;
  const want = offer.accepts[0] as OfferNetwork;
  const chainId = numberToHex(want.chainId);
  const wrong = new Stop(
    "Your wallet is on another network",
    `This file is sold on ${want.label}. Switch your wallet to ${want.label} and press the button again. Nothing was charged.`,
  );
  try {
    await call(provider, "wallet_switchEthereumChain", [{ chainId }]);
  } catch (e) {
    if (errorCode(e) !== UNKNOWN_CHAIN) throw wrong;
    try {
      await call(provider, "wallet_addEthereumChain", [
        {
          chainId,
          chainName: want.label,
          nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
          rpcUrls: [want.rpcUrl],
          blockExplorerUrls: [want.explorer],
        },
      ]);
    } catch {
      throw wrong;
    }
  }
  if (Number(await call(provider, "eth_chainId")) !== want.chainId) throw wrong;
  return want;
}

/** USDC balanceOf(address), read through the wallet's own RPC. */
async function balanceOf(provider: Provider, network: OfferNetwork, owner: Address): Promise<bigint> {
  const data = `0x70a08231${owner.slice(2).toLowerCase().padStart(64, "0")}` as Hex;
  const result: Hex = await call(provider, "eth_call", [{ to: network.accepted.asset, data }, "latest"]);
  return result === "0x" ? 0n : hexToBigInt(result);
}

// ---- paying -------------------------------------------------------------------------------

const b64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));
const unb64 = (text: string) => new TextDecoder().decode(Uint8Array.from(atob(text), (c) => c.charCodeAt(0)));

/** EIP-3009 TransferWithAuthorization for exactly the price, signed with eth_signTypedData_v4. */
async function signPayment(provider: Provider, network: OfferNetwork, from: Address) {
  const now = Math.floor(Date.now() / 1000);
  const { accepted } = network;
  const window = accepted.maxTimeoutSeconds ?? 60;
  const authorization = {
    from,
    to: getAddress(accepted.payTo),
    value: accepted.amount,
    // A little in the past: the buyer's clock may run ahead of the chain's.
    validAfter: String(now - 600),
    validBefore: String(now + window),
    nonce: bytesToHex(crypto.getRandomValues(new Uint8Array(32))),
  };
  const typedData = serializeTypedData({
    domain: {
      name: String(accepted.extra?.name ?? "USDC"),
      version: String(accepted.extra?.version ?? "2"),
      // A number, as wallets expect it (viem's own signTypedData sends it so); the type says bigint.
      chainId: network.chainId as unknown as bigint,
      verifyingContract: getAddress(accepted.asset),
    },
    types: {
      EIP712Domain: [
        { name: "name", type: "string" },
        { name: "version", type: "string" },
        { name: "chainId", type: "uint256" },
        { name: "verifyingContract", type: "address" },
      ],
      TransferWithAuthorization: [
        { name: "from", type: "address" },
        { name: "to", type: "address" },
        { name: "value", type: "uint256" },
        { name: "validAfter", type: "uint256" },
        { name: "validBefore", type: "uint256" },
        { name: "nonce", type: "bytes32" },
      ],
    },
    primaryType: "TransferWithAuthorization",
    message: {
      ...authorization,
      value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter),
      validBefore: BigInt(authorization.validBefore),
    },
  });
  let signature: Hex;
  try {
    signature = await call(provider, "eth_signTypedData_v4", [from, typedData]);
  } catch (e) {
    if (errorCode(e) === USER_REJECTED)
      throw new Stop(
        "You declined the signature",
        "Nothing was charged. Press Pay with wallet to try again when you are ready.",
      );
    throw e;
  }
  // x402 v2: PAYMENT-SIGNATURE carries the requirement chosen and the signed authorization.
  const header = b64(
    JSON.stringify({ x402Version: 2, resource: offer.resource, accepted, payload: { signature, authorization } }),
  );
  return { header, validBefore: now + window, network };
}

interface Receipt {
  transaction?: string;
}

/**
 * Sends a credential (a payment or a sign-in) for one byte of the file: the
 * answer carries the receipt and sets the access cookie, and the file itself
 * comes with the navigation that follows.
 */
function send(headers: Record<string, string>): Promise<Response> {
  return fetch(offer.path, {
    headers: { ...headers, ...(offer.size > 0 ? { Range: "bytes=0-0" } : {}) },
    credentials: "same-origin",
    cache: "no-store",
  });
}

async function reasonOf(response: Response): Promise<{ reason?: string; error?: string }> {
  try {
    const body = (await response.json()) as { reason?: string; error?: string | { code?: string; message?: string } };
    if (typeof body.error === "object") return { reason: body.error.code, error: body.error.message };
    return { reason: body.reason, error: body.error };
  } catch {
    return {};
  }
}

function ready(network: OfferNetwork | undefined, receipt: Receipt | undefined) {
  steps(undefined, ["sign", "settle", "ready"]);
  // Bought: nothing more to pay or sign; the link below downloads again (the cookie holds the access).
  (payButton.parentElement as HTMLElement).hidden = true;
  const extra = document.createElement("p");
  if (receipt?.transaction && network) {
    extra.append("Paid on ", network.label, ": ");
    extra.append(
      link(`${network.explorer}/tx/${receipt.transaction}`, `transaction ${receipt.transaction.slice(0, 10)}…`),
    );
    extra.append(". ");
  }
  const again = link(offer.path, `Download ${offer.fileName} again`);
  again.className = "button primary";
  const p = document.createElement("p");
  p.append(again);
  extra.append(p);
  say("ok", "Ready: your download starts", `${offer.fileName} is yours.`, extra);
  // A real navigation to the file's URL: the gateway answers with the file, its name and type.
  location.assign(offer.path);
}

async function settle(payment: NonNullable<typeof pending>): Promise<void> {
  steps("settle", ["sign"]);
  say(
    "info",
    "Settling on chain",
    `Sending ${payment.network.usdc} USDC on ${payment.network.label}. This takes a few seconds.`,
  );
  let response: Response;
  try {
    response = await send({ "PAYMENT-SIGNATURE": payment.header });
  } catch {
    response = new Response(null, { status: 599 });
  }
  if (response.ok) {
    pending = undefined;
    const raw = response.headers.get("PAYMENT-RESPONSE");
    let receipt: Receipt | undefined;
    try {
      receipt = raw ? (JSON.parse(unb64(raw)) as Receipt) : undefined;
    } catch {
      receipt = undefined;
    }
    await response.body?.cancel();
    ready(payment.network, receipt);
    return;
  }
  // 503 is "sent to the chain, not mined yet" (the same proof shortly is served) unless the body says
  // file_changed: paid, and the file changed under its CID meanwhile; the purchase stands.
  const failure = response.status >= 500 ? await reasonOf(response) : {};
  if (response.status === 503 && failure.reason !== "file_changed") {
    await new Promise((r) => setTimeout(r, Number(response.headers.get("Retry-After") ?? "5") * 1000));
    return settle(payment);
  }
  steps(undefined);
  if (failure.reason === "file_changed") {
    pending = undefined;
    payButton.hidden = true; // paid already: signing in is the way back, never a second payment
    throw new Stop(
      "Paid, but the file is being updated",
      "Your purchase stands: the seller changed this file while your payment settled. Come back in a minute and use Sign in with wallet to download it without paying again.",
    );
  }
  if (response.status === 500 || response.status === 599 || response.status === 502 || response.status === 504) {
    payButton.textContent = "Try again";
    // The gateway says when the settlement went out unanswered ("the payment may have been made"); a 502
    // facilitator_untrusted is a settlement claimed and not seen on chain: money may have moved too.
    const mayHavePaid = failure.reason === "facilitator_untrusted" || /may have been made/.test(failure.error ?? "");
    throw new Stop(
      "The payment service is unavailable",
      mayHavePaid
        ? "Your payment was sent but not confirmed, so it may have been charged. Press Try again: the same signed payment is sent again, so you cannot be charged twice; if it went through, you get the file."
        : "Your payment did not go through and nothing was charged for it. Press Try again: the same signed payment is sent again, so you cannot be charged twice.",
    );
  }
  pending = undefined;
  const { reason, error } = await reasonOf(response);
  throw new Stop(
    "The payment was refused",
    `${error ?? "The seller's server refused the payment"}${reason ? ` (${reason})` : ""}. Nothing was charged. Press Pay with wallet to sign a new payment.`,
  );
}

async function pay() {
  if (pending && pending.validBefore > Date.now() / 1000 + 5) return settle(pending);
  pending = undefined;
  const wallet = await chooseWallet();
  say("info", "Connecting to your wallet", `Approve the connection in ${wallet.name}.`);
  const from = await connect(wallet.provider);
  const network = await onNetwork(wallet.provider);
  const price = BigInt(network.accepted.amount);
  const balance = await balanceOf(wallet.provider, network, from);
  if (balance < price) {
    const missing = formatUnits(price - balance, 6);
    throw new Stop(
      "Not enough USDC",
      `Your wallet holds ${formatUnits(balance, 6)} USDC on ${network.label}; this file costs ${network.usdc} USDC. Add at least ${missing} USDC (${formatDollars(missing)}) to ${from} and press Pay again. Nothing was charged.`,
    );
  }
  steps("sign");
  say("info", "Waiting for your signature", `Approve the transfer of ${network.usdc} USDC in ${wallet.name}.`);
  pending = await signPayment(wallet.provider, network, from);
  await settle(pending);
}

// ---- signing in (a returning buyer) -------------------------------------------------------

interface SiwxChallenge {
  info: {
    domain: string;
    uri: string;
    version: string;
    nonce: string;
    issuedAt: string;
    expirationTime?: string;
    notBefore?: string;
    statement?: string;
    requestId?: string;
    resources?: string[];
  };
  supportedChains: { chainId: string; type: string }[];
}

async function signIn() {
  const wallet = await chooseWallet();
  say("info", "Connecting to your wallet", `Approve the connection in ${wallet.name}.`);
  const address = await connect(wallet.provider);
  // A fresh challenge: its nonce is good for a few minutes and used once.
  const offered = await fetch(offer.path, { credentials: "omit", cache: "no-store" });
  const header = offered.headers.get("PAYMENT-REQUIRED");
  await offered.body?.cancel();
  const challenge = header
    ? (JSON.parse(unb64(header)) as { extensions?: Record<string, SiwxChallenge> }).extensions?.["sign-in-with-x"]
    : undefined;
  if (!challenge) throw new Stop("Signing in is not offered here", "Pay with wallet to download this file.");
  const chainIds = challenge.supportedChains.map((c) => c.chainId);
  const chain = offer.accepts.find((a) => chainIds.includes(a.accepted.network))?.accepted.network ?? chainIds[0];
  if (!chain) throw new Stop("Signing in is not offered here", "Pay with wallet to download this file.");
  const { info } = challenge;
  const message = createSiweMessage({
    domain: info.domain,
    address,
    statement: info.statement,
    uri: info.uri,
    version: "1",
    chainId: Number(chain.slice("eip155:".length)),
    nonce: info.nonce,
    issuedAt: new Date(info.issuedAt),
    expirationTime: info.expirationTime ? new Date(info.expirationTime) : undefined,
    notBefore: info.notBefore ? new Date(info.notBefore) : undefined,
    requestId: info.requestId,
    resources: info.resources,
  });
  steps("sign");
  say("info", "Waiting for your signature", `Sign the sign-in message in ${wallet.name}. It costs nothing.`);
  let signature: Hex;
  try {
    signature = await call(wallet.provider, "personal_sign", [stringToHex(message), address]);
  } catch (e) {
    steps(undefined);
    if (errorCode(e) === USER_REJECTED)
      throw new Stop("You declined the signature", "Nothing was charged. Press Sign in with wallet to try again.");
    throw e;
  }
  const proof = { ...info, address, chainId: chain, type: "eip191", signature };
  const response = await send({ "SIGN-IN-WITH-X": b64(JSON.stringify(proof)) });
  await response.body?.cancel();
  if (response.ok) return ready(undefined, undefined);
  steps(undefined);
  if (response.status === 402)
    throw new Stop(
      "This wallet has not bought this file",
      `No purchase of this file by ${address} is on record (or its access has ended). Pay with wallet to buy it, or sign in with the wallet you paid with.`,
    );
  const { reason, error } = await reasonOf(response);
  throw new Stop(
    "Signing in failed",
    `${error ?? "The server refused the sign-in"}${reason ? ` (${reason})` : ""}. Try again.`,
  );
}

// ---- wiring -------------------------------------------------------------------------------

async function run(action: Action) {
  if (busy) return;
  setBusy(true);
  walletBox.hidden = true;
  try {
    await (action === "pay" ? pay() : signIn());
  } catch (e) {
    if (!(e instanceof Stop)) steps(undefined);
    if (e instanceof Stop) say("error", e.title, e.text);
    else
      say(
        "error",
        "Something went wrong",
        `${e instanceof Error ? e.message : String(e)}. Nothing was charged unless a transaction is shown above; reload the page and try again.`,
      );
  } finally {
    setBusy(false);
  }
}

payButton.addEventListener("click", () => run("pay"));
signInButton.addEventListener("click", () => run("signin"));
if (offer.browserCanBuy) {
  payButton.disabled = false;
  signInButton.disabled = false;
}
// bench:paywall reads this: from navigation start to a page that can pay.
performance.mark("paywall-ready");
