/**
 * `npm run demo`: a real payment end to end on this machine, no wallet and no
 * internet needed. It starts a local chain with a test USDC, runs cidgate
 * itself (the same entry point as `npm start`) with the example config/ and
 * content/ and the in-process facilitator, then a buyer asks for the article,
 * gets a 402, pays with x402-fetch, and receives the file.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { erc20Abi, formatUnits } from "viem";
import { createSigner, decodeXPaymentResponse, wrapFetchWithPayment } from "x402-fetch";
import { localPublicClient, startDevnet } from "../src/chain/devnet";
import { cidOfFile } from "../src/content/cid";

const ROOT = join(import.meta.dir, "..");
const ARTICLE = "content/articles/why-pay-per-file.md";
const usd = (units: bigint) => `${formatUnits(units, 6)} USDC`;
const step = (text: string) => console.log(`\n\x1b[1m${text}\x1b[0m`);

function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

async function waitForServer(url: string, server: Bun.Subprocess, timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (server.exitCode !== null) throw new Error(`cidgate exited with code ${server.exitCode}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(500) });
      return;
    } catch {
      await Bun.sleep(50);
    }
  }
  throw new Error(`cidgate did not answer at ${url} within ${timeoutMs} ms`);
}

step("1. A local chain (anvil, chain id 84532 = base-sepolia) with a test USDC");
const devnet = await startDevnet({ buyers: 1 });
const dataDir = mkdtempSync(join(tmpdir(), "cidgate-demo-"));
let server: Bun.Subprocess | undefined;
try {
  const buyer = devnet.buyers[0];
  const chain = localPublicClient(devnet.rpcUrl);
  const balance = (address: `0x${string}`) =>
    chain.readContract({ address: devnet.token, abi: erc20Abi, functionName: "balanceOf", args: [address] });
  console.log(`   RPC ${devnet.rpcUrl}, token ${devnet.token}`);
  console.log(`   buyer ${buyer.address}, seller ${devnet.seller.address}`);

  step("2. cidgate, with config/ and content/ and its own facilitator (FACILITATOR_URL=local)");
  const port = freePort();
  const origin = `http://127.0.0.1:${port}`;
  server = Bun.spawn([process.execPath, "src/index.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: "127.0.0.1",
      CIDGATE_DB: join(dataDir, "cidgate.db"),
      CIDGATE_CONFIG_DIR: "config",
      CIDGATE_CONTENT_DIR: "content",
      JWT_SECRET: crypto.randomUUID() + crypto.randomUUID(),
      PAY_TO: devnet.seller.address, // config/pricing.yaml reads ${PAY_TO}
      USDC_ADDRESS_BASE_SEPOLIA: devnet.token,
      FACILITATOR_URL: "local",
      RPC_URL: devnet.rpcUrl,
      RELAYER_PRIVATE_KEY: devnet.relayer.privateKey,
      LOG_LEVEL: "warn",
    },
    stdout: "inherit",
    stderr: "inherit",
  });
  await waitForServer(origin, server);

  const cid = (await cidOfFile(join(ROOT, ARTICLE))).toString();
  const url = `${origin}/x402/cid/${cid}`;

  step(`3. The buyer asks for ${ARTICLE} without paying`);
  console.log(`   GET ${url}`);
  const unpaid = await fetch(url);
  const offer = (await unpaid.json()) as { accepts: { maxAmountRequired: string; payTo: string; network: string }[] };
  const price = BigInt(offer.accepts[0].maxAmountRequired);
  console.log(
    `   -> ${unpaid.status} Payment Required: ${usd(price)} on ${offer.accepts[0].network} to ${offer.accepts[0].payTo}`,
  );

  const before = { buyer: await balance(buyer.address), seller: await balance(devnet.seller.address) };

  step("4. The buyer pays with x402-fetch (signs an EIP-3009 authorization; cidgate settles it on chain)");
  const signer = await createSigner("base-sepolia", buyer.privateKey);
  const payingFetch = wrapFetchWithPayment(fetch, signer as never, price);
  const paid = await payingFetch(url);
  if (paid.status !== 200) throw new Error(`expected 200 after paying, got ${paid.status}: ${await paid.text()}`);
  const receipt = decodeXPaymentResponse(paid.headers.get("x-payment-response")!);
  const body = await paid.text();
  console.log(
    `   -> ${paid.status} ${paid.headers.get("content-type")}, ${body.length} bytes; first line: ${body.split("\n")[0]}`,
  );
  console.log(`   transaction ${receipt.transaction}`);

  const after = { buyer: await balance(buyer.address), seller: await balance(devnet.seller.address) };
  step("5. Balances on chain");
  console.log(`   price   ${usd(price)}`);
  console.log(`   buyer   ${usd(before.buyer)} -> ${usd(after.buyer)}`);
  console.log(`   seller  ${usd(before.seller)} -> ${usd(after.seller)}`);
  if (before.buyer - after.buyer !== price || after.seller - before.seller !== price) {
    throw new Error("balances did not move by the price");
  }

  step("6. The buyer downloads it again with the same client (a fresh authorization, as every x402 client sends)");
  const again = await payingFetch(url);
  if (again.status !== 200) throw new Error(`expected 200 on the second download, got ${again.status}`);
  await again.arrayBuffer();
  const owned = decodeXPaymentResponse(again.headers.get("x-payment-response")!);
  const later = { buyer: await balance(buyer.address), seller: await balance(devnet.seller.address) };
  if (later.buyer !== after.buyer || later.seller !== after.seller) throw new Error("the second download was charged");
  console.log(
    `   -> ${again.status}, no second charge: buyer still ${usd(later.buyer)} (the entitlement from transaction ${owned.transaction.slice(0, 10)}…)`,
  );

  console.log("\nDone: one real payment, settled before a byte was served, and the file owned after it.");
} catch (e) {
  console.error(`\ndemo failed: ${(e as Error).message}`);
  process.exitCode = 1;
} finally {
  server?.kill("SIGTERM");
  await server?.exited;
  await devnet.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
