/**
 * Compiles the local chain's contracts (dev/contracts/*.sol) with solc from
 * npm and, run as a script, writes dev/artifacts/<Name>.json:
 *
 *   npx bun dev/compile.ts
 *
 * The artifacts are committed so that starting a devnet never needs solc
 * (a few seconds of wasm); test/chain/artifacts.test.ts recompiles and fails
 * when they no longer match the source.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import solc from "solc";

const here = import.meta.dir;
export const CONTRACTS_DIR = join(here, "contracts");
export const ARTIFACTS_DIR = join(here, "artifacts");

export interface Artifact {
  contractName: string;
  sourceName: string;
  compiler: string;
  evmVersion: string;
  abi: unknown[];
  bytecode: `0x${string}`;
  deployedBytecode: `0x${string}`;
}

// Pinned so the same source always gives the same bytes (the artifact test relies on it).
const EVM_VERSION = "cancun";

export function compileContracts(): Artifact[] {
  const sources: Record<string, { content: string }> = {};
  for (const file of readdirSync(CONTRACTS_DIR)
    .filter((f) => f.endsWith(".sol"))
    .sort()) {
    sources[file] = { content: readFileSync(join(CONTRACTS_DIR, file), "utf8") };
  }
  const input = {
    language: "Solidity",
    sources,
    settings: {
      evmVersion: EVM_VERSION,
      optimizer: { enabled: true, runs: 10000 },
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((e: { severity: string }) => e.severity === "error");
  if (errors.length) {
    throw new Error(errors.map((e: { formattedMessage: string }) => e.formattedMessage).join("\n"));
  }
  const artifacts: Artifact[] = [];
  for (const [sourceName, contracts] of Object.entries(output.contracts as Record<string, Record<string, any>>)) {
    for (const [contractName, c] of Object.entries(contracts)) {
      artifacts.push({
        contractName,
        sourceName: `dev/contracts/${sourceName}`,
        compiler: `solc ${solc.version()}`,
        evmVersion: EVM_VERSION,
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
      });
    }
  }
  return artifacts.filter((a) => a.bytecode.length > 2); // interfaces have no code
}

if (import.meta.main) {
  for (const a of compileContracts()) {
    const path = join(ARTIFACTS_DIR, `${a.contractName}.json`);
    writeFileSync(path, `${JSON.stringify(a, null, 2)}\n`);
    console.log(`wrote ${path} (${(a.deployedBytecode.length - 2) / 2} bytes of code)`);
  }
}
