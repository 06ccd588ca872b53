import { expect, test } from "bun:test";
import { join } from "node:path";

// The README's first thing to try must keep working: run it as a newcomer would.
test("npm run demo pays for a file on the local chain and prints the transaction and balances", async () => {
  const demo = Bun.spawn([process.execPath, "scripts/demo.ts"], {
    cwd: join(import.meta.dir, "../.."),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(demo.stdout).text(),
    new Response(demo.stderr).text(),
    demo.exited,
  ]);
  expect(err).not.toContain("demo failed");
  expect(code).toBe(0);
  expect(out).toContain("402 Payment Required: 0.01 USDC");
  expect(out).toMatch(/transaction 0x[0-9a-f]{64}/);
  expect(out).toContain("buyer   1000 USDC -> 999.99 USDC");
  expect(out).toContain("seller  0 USDC -> 0.01 USDC");
  expect(out).toContain("-> 200, no second charge: buyer still 999.99 USDC");
}, 60_000);
