import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ARTIFACTS_DIR, compileContracts } from "../../dev/compile";

// The devnet deploys the committed artifact; it must be what the source compiles to.
test("committed artifacts match dev/contracts (rebuild: npx bun dev/compile.ts)", () => {
  const fresh = compileContracts();
  expect(fresh.map((a) => a.contractName).sort()).toEqual(["Multicall3", "TestSmartWallet", "USDC"]);
  for (const a of fresh) {
    const committed = JSON.parse(readFileSync(join(ARTIFACTS_DIR, `${a.contractName}.json`), "utf8"));
    expect(committed.bytecode).toBe(a.bytecode);
    expect(committed.deployedBytecode).toBe(a.deployedBytecode);
    expect(committed.abi).toEqual(a.abi);
  }
}, 60_000); // solc (JS) compiles for seconds, more under --coverage: a generous limit, not a speed claim
