/// <reference lib="dom" />
/**
 * Finding a wallet and talking to it (EIP-1193). Every injected wallet
 * announces itself through EIP-6963 (mipd listens); a wallet too old for
 * that is still reached as `window.ethereum`.
 */
import { createStore, type EIP1193Provider, type EIP6963ProviderDetail } from "mipd";

export type Provider = Pick<EIP1193Provider, "request">;

export interface WalletChoice {
  name: string;
  icon?: string;
  provider: Provider;
}

const store = typeof window === "undefined" ? undefined : createStore();

/** The wallets in this browser: every EIP-6963 announcement, else window.ethereum. */
export function wallets(): WalletChoice[] {
  const announced = (store?.getProviders() ?? []) as readonly EIP6963ProviderDetail[];
  if (announced.length > 0)
    return announced.map((d) => ({ name: d.info.name, icon: d.info.icon, provider: d.provider as Provider }));
  const legacy = (window as { ethereum?: Provider }).ethereum;
  return legacy && typeof legacy.request === "function" ? [{ name: "Browser wallet", provider: legacy }] : [];
}

/** An EIP-1193 error: 4001 the user said no, 4902 the chain is unknown to the wallet. */
export function errorCode(e: unknown): number | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : undefined;
}

export const USER_REJECTED = 4001;
export const UNKNOWN_CHAIN = 4902;

// biome-ignore lint/suspicious/noExplicitAny: EIP-1193 methods are strings with free-form params
export const call = (p: Provider, method: string, params?: unknown[]): Promise<any> =>
  // biome-ignore lint/suspicious/noExplicitAny: see above
  (p.request as any)({ method, params });
