/**
 * What confirming on chain costs the paid path (issue 10): a remote
 * facilitator's settlement costs the gateway one RPC call (the receipt); the
 * built-in facilitator's own receipt is the confirmation, so the gateway asks
 * the chain nothing more. Real devnet and facilitator; the RPC is reached
 * through a counting relay (it forwards every call to anvil untouched).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import {
  buy,
  buyerOf,
  type ChaosChain,
  type ChaosGateway,
  proofFor,
  rowOf,
  startChaosChain,
  startChaosGateway,
} from "../../chaos/stack";
import { createLocalFacilitator } from "../../src/facilitator/local";
import { chainReaders } from "../../src/ledger/chain-lookup";
import { createLedgerSettler } from "../../src/ledger/settler";
import { loadSettings } from "../../src/settings";

let chain: ChaosChain;
let gw: ChaosGateway;
let relay: ReturnType<typeof Bun.serve>;
const methods: string[] = [];

beforeAll(async () => {
  chain = await startChaosChain(3);
  relay = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const body = await request.text();
      const parsed = JSON.parse(body);
      for (const call of Array.isArray(parsed) ? parsed : [parsed]) methods.push(call.method);
      const res = await fetch(chain.devnet.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      return new Response(await res.text(), { headers: { "content-type": "application/json" } });
    },
  });
  gw = await startChaosGateway(chain, {
    rpc: true,
    files: { "f.txt": "counted\n" },
    env: { RPC_URL: `http://127.0.0.1:${relay.port}` },
  });
});
afterAll(async () => {
  await gw?.stop();
  await relay?.stop(true);
  await chain?.stop();
});

test("a remote facilitator's settlement: exactly one RPC call on the paid path, the receipt", async () => {
  // The first paid request also learns the RPC's chain id (once per process).
  expect((await buy(gw.url, gw.cids["f.txt"], (await proofFor(chain, 0)).header)).status).toBe(200);
  methods.length = 0;
  const p = await proofFor(chain, 1);
  const res = await buy(gw.url, gw.cids["f.txt"], p.header);
  expect(res.status).toBe(200);
  expect(rowOf(gw.db, buyerOf(chain, 1).address, p.nonce)!.state).toBe("settled");
  expect(methods).toEqual(["eth_getTransactionReceipt"]);
});

test("the built-in facilitator's success is not confirmed again", async () => {
  const settings = loadSettings({ RPC_URL: chain.devnet.rpcUrl });
  const local = createLocalFacilitator({
    rpcUrl: chain.devnet.rpcUrl,
    relayerPrivateKey: chain.devnet.relayer.privateKey,
    settings,
  });
  expect(local.confirmsOnChain).toBe(true);
  let confirms = 0;
  const settler = createLedgerSettler({
    payments: gw.stores.payments,
    facilitator: local,
    timeoutMs: 20_000,
    confirm: async () => {
      confirms++;
      return { state: "confirmed" };
    },
  });
  const p = await proofFor(chain, 2);
  const item = (await gw.stores.instructions.forCid(gw.cids["f.txt"]))!;
  const decoded = JSON.parse(Buffer.from(p.header, "base64").toString("utf8"));
  const outcome = await settler.pay({
    claim: {
      network: "base-sepolia",
      asset: chain.devnet.token,
      payer: buyerOf(chain, 2).address,
      nonce: p.nonce.toLowerCase(),
      cid: gw.cids["f.txt"],
      instructionId: item.id,
      instructionVersion: 1,
      amount: "10000",
      payTo: chain.devnet.seller.address,
      validBefore: BigInt(decoded.payload.authorization.validBefore),
      x402Version: 1,
      proofHash: "0xlocal",
    },
    request: {
      x402Version: 1,
      paymentPayload: decoded,
      paymentRequirements: {
        scheme: "exact",
        network: "base-sepolia",
        maxAmountRequired: "10000",
        resource: `${gw.url}/x402/cid/${gw.cids["f.txt"]}`,
        description: "",
        mimeType: "text/plain",
        payTo: chain.devnet.seller.address,
        maxTimeoutSeconds: 60,
        asset: chain.devnet.token,
        extra: { name: "USDC", version: "2" },
      },
    } as never,
  });
  local.close();
  expect(outcome.kind).toBe("paid");
  expect(confirms).toBe(0);
});

test("an RPC per network: RPC_URL_BASE_SEPOLIA alone reads base-sepolia rows; a base row has no RPC", async () => {
  // A payment the first test settled.
  const row = (await gw.stores.payments.list({ state: "settled" }, { limit: 1 })).items[0];
  const perNetwork = chainReaders({
    rpcUrl: undefined,
    rpcUrlBaseSepolia: chain.devnet.rpcUrl,
    facilitatorTimeoutMs: 5000,
  })!;
  expect(await perNetwork.lookup(row)).toEqual({ state: "paid", txHash: row.txHash as `0x${string}` });
  expect(await perNetwork.confirm(row, row.txHash!)).toEqual({ state: "confirmed" });
  expect(await perNetwork.lookup({ ...row, network: "base" })).toBeUndefined();
  // RPC_URL is on the devnet's chain (84532): it never answers for base (8453).
  const single = chainReaders({ rpcUrl: chain.devnet.rpcUrl, facilitatorTimeoutMs: 5000 })!;
  expect(await single.confirm({ ...row, network: "base" }, row.txHash!)).toBeUndefined();
  expect(chainReaders({ rpcUrl: undefined, facilitatorTimeoutMs: 5000 })).toBeUndefined();
});
