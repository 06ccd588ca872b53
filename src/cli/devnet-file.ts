/**
 * The devnet's JSON file (`cidgate devnet --out`, `cidgate dev`'s buyers.json):
 * what scripts and `cidgate buy --devnet` read. It holds private keys: the
 * folder 0700, the file 0600, written whole then renamed so a script polling
 * for it never reads half of it (a leftover temp file is replaced, not reused).
 */
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Devnet } from "../chain/devnet";
import { ensurePrivateDir } from "../private-files";

export function writeDevnetFile(out: string, devnet: Devnet, extra: Record<string, unknown>): void {
  const description = {
    rpcUrl: devnet.rpcUrl,
    chainId: devnet.chainId,
    network: "base-sepolia",
    token: devnet.token,
    buyers: devnet.buyers,
    seller: { address: devnet.seller.address },
    ...extra,
    /** anvil's process id, for scripts that check it is gone. */
    pid: devnet.pid,
  };
  ensurePrivateDir(dirname(out) || ".", "the devnet file's folder");
  rmSync(`${out}.tmp`, { force: true });
  writeFileSync(`${out}.tmp`, `${JSON.stringify(description, null, 2)}\n`, { mode: 0o600, flag: "wx" });
  renameSync(`${out}.tmp`, out);
}
