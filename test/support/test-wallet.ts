/**
 * A browser wallet for page tests: an EIP-1193 provider injected into the
 * page (page.addInitScript) and announced through EIP-6963, exactly as
 * MetaMask or Rabby announce themselves, backed by a real key on this side
 * (page.exposeFunction). It signs for real with viem and reads the devnet
 * through its RPC: the payment it makes is a real one. What a person would
 * do in the wallet's popup (approve, decline) is the `decline` switch.
 *
 * Written for the tests; not a mock of the payment.
 */
import type { Page } from "playwright-core";
import { type Hex, hexToString, numberToHex, type TypedDataDefinition } from "viem";
import { privateKeyToAccount } from "viem/accounts";

export interface TestWalletOptions {
  privateKey: Hex;
  /** The devnet's RPC (answers eth_call for `chainId`). */
  rpcUrl: string;
  /** The chain the devnet runs (84532). */
  chainId: number;
  /** The chain the wallet is on when the page opens (default `chainId`): another one makes the page switch. */
  startChainId?: number;
  name?: string;
  /** "eip6963" (default): announced as modern wallets do; "legacy": only `window.ethereum`, as old ones. */
  inject?: "eip6963" | "legacy";
}

let bridges = 0;

export interface TestWallet {
  address: `0x${string}`;
  /** Every method the page called, in order. */
  calls: string[];
  /** Methods the "person" declines in the popup (EIP-1193 4001). */
  decline: Set<string>;
  chainId: number;
}

type Answer = { result: unknown } | { error: { code: number; message: string } };

const rejected = (message: string): Answer => ({ error: { code: 4001, message } });

/** Typed data as the page sent it (JSON: numbers as strings) -> what viem signs (bigints). */
function typedDataOf(json: string): TypedDataDefinition {
  const data = JSON.parse(json) as {
    domain: Record<string, unknown>;
    types: Record<string, { name: string; type: string }[]>;
    primaryType: string;
    message: Record<string, unknown>;
  };
  const { EIP712Domain: _domain, ...types } = data.types;
  const message: Record<string, unknown> = { ...data.message };
  for (const field of types[data.primaryType] ?? []) {
    if (/^u?int\d*$/.test(field.type)) message[field.name] = BigInt(message[field.name] as string);
  }
  const domain = { ...data.domain };
  if (domain.chainId !== undefined) domain.chainId = Number(domain.chainId);
  return { domain, types, primaryType: data.primaryType, message } as unknown as TypedDataDefinition;
}

export async function installTestWallet(page: Page, options: TestWalletOptions): Promise<TestWallet> {
  const account = privateKeyToAccount(options.privateKey);
  const wallet: TestWallet = {
    address: account.address,
    calls: [],
    decline: new Set(),
    chainId: options.startChainId ?? options.chainId,
  };
  const known = new Set([options.chainId]);

  async function rpc(method: string, params: unknown[]): Promise<unknown> {
    const response = await fetch(options.rpcUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    const body = (await response.json()) as { result?: unknown; error?: { message: string } };
    if (body.error) throw new Error(body.error.message);
    return body.result;
  }

  async function handle(method: string, params: unknown[]): Promise<Answer> {
    wallet.calls.push(method);
    if (wallet.decline.has(method)) return rejected("User rejected the request.");
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return { result: [account.address] };
      case "eth_chainId":
        return { result: numberToHex(wallet.chainId) };
      case "wallet_switchEthereumChain": {
        const chainId = Number((params[0] as { chainId: string }).chainId);
        if (!known.has(chainId)) return { error: { code: 4902, message: "Unrecognized chain ID." } };
        wallet.chainId = chainId;
        return { result: null };
      }
      case "wallet_addEthereumChain":
        known.add(Number((params[0] as { chainId: string }).chainId));
        return { result: null };
      case "eth_call":
        if (wallet.chainId !== options.chainId) return { error: { code: -32000, message: "no RPC for this chain" } };
        return { result: await rpc(method, params) };
      case "eth_signTypedData_v4": {
        const [from, json] = params as [string, string];
        if (from.toLowerCase() !== account.address.toLowerCase())
          return { error: { code: 4100, message: "unknown account" } };
        const typed = typedDataOf(json);
        // As MetaMask does: a domain for another chain than the wallet's is refused.
        if (Number(typed.domain?.chainId) !== wallet.chainId)
          return { error: { code: -32602, message: "chainId does not match the active chain" } };
        return { result: await account.signTypedData(typed) };
      }
      case "personal_sign": {
        const [message] = params as [Hex, string];
        return { result: await account.signMessage({ message: hexToString(message) }) };
      }
      default:
        return { error: { code: 4200, message: `unsupported method ${method}` } };
    }
  }

  // One bridge per wallet: a page may hold several wallets, as a browser with several extensions does.
  const bridgeName = `__cidgateTestWallet${++bridges}`;
  await page.exposeFunction(bridgeName, async (method: string, params: string) => {
    try {
      return await handle(method, JSON.parse(params) as unknown[]);
    } catch (e) {
      return { error: { code: -32603, message: (e as Error).message } };
    }
  });
  await page.addInitScript(
    ({ name, bridgeName, inject }) => {
      const bridge = (window as unknown as Record<string, (m: string, p: string) => Promise<Answer>>)[bridgeName] as (
        m: string,
        p: string,
      ) => Promise<Answer>;
      const provider = {
        async request({ method, params }: { method: string; params?: unknown[] }) {
          const answer = await bridge(method, JSON.stringify(params ?? []));
          if ("error" in answer) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
          return answer.result;
        },
        on() {},
        removeListener() {},
      };
      const info = {
        uuid: crypto.randomUUID(),
        name,
        icon: "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 8 8'%3E%3Crect width='8' height='8' fill='%23e07b00'/%3E%3C/svg%3E",
        rdns: `dev.cidgate.${bridgeName.toLowerCase()}`,
      };
      if (inject === "legacy") {
        (window as unknown as { ethereum: typeof provider }).ethereum = provider;
        return;
      }
      const announce = () =>
        window.dispatchEvent(
          new CustomEvent("eip6963:announceProvider", { detail: Object.freeze({ info, provider }) }),
        );
      window.addEventListener("eip6963:requestProvider", announce);
      announce();
    },
    { name: options.name ?? "Test Wallet", bridgeName, inject: options.inject ?? "eip6963" },
  );
  return wallet;
}
