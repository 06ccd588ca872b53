/**
 * What the page tells a wallet about each network: how to add it (when the
 * wallet does not know it) and where its transactions are seen. Only
 * handed to the wallet and linked; the page itself loads nothing from them.
 */
import type { NetworkName } from "../chain/networks";

export const WALLET_NETWORKS: Record<NetworkName, { label: string; rpcUrl: string; explorer: string }> = {
  base: { label: "Base", rpcUrl: "https://mainnet.base.org", explorer: "https://basescan.org" },
  "base-sepolia": {
    label: "Base Sepolia",
    rpcUrl: "https://sepolia.base.org",
    explorer: "https://sepolia.basescan.org",
  },
};
