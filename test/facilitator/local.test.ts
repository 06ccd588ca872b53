import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ExactEvmScheme as ExactEvmClient } from "@x402/evm/exact/client";
import { ExactEvmSchemeV1 as ExactEvmClientV1 } from "@x402/evm/exact/v1/client";
import { createPublicClient, createWalletClient, getAddress, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import walletArtifact from "../../dev/artifacts/TestSmartWallet.json";
import { type Devnet, devnetChain, startDevnet } from "../../src/chain/devnet";
import { createLocalFacilitator, type LocalFacilitator } from "../../src/facilitator/local";
import { FacilitatorUnavailableError } from "../../src/facilitator/types";
import type { ExactEvmPayload } from "../../src/x402/models";
import { balances, payment, rpcProxy, txCount } from "./helpers";

let devnet: Devnet;
let facilitator: LocalFacilitator;

function make(o: { networks?: ("base" | "base-sepolia")[]; receiptTimeoutSeconds?: number; rpcUrl?: string } = {}) {
  return createLocalFacilitator({
    rpcUrl: o.rpcUrl ?? devnet.rpcUrl,
    relayerPrivateKey: devnet.relayer.privateKey,
    networks: o.networks,
    settings: { receiptTimeoutSeconds: o.receiptTimeoutSeconds ?? 30, facilitatorNetworks: ["base-sepolia"] },
  });
}

beforeAll(async () => {
  devnet = await startDevnet({ buyers: 3 });
  facilitator = make();
});
afterAll(() => devnet?.stop());

describe("valid payments settle and balances move", () => {
  test("v1 (signed by x402's own v1 client)", async () => {
    const balanceOf = balances(devnet);
    const [buyerBefore, sellerBefore] = [
      await balanceOf(devnet.buyers[0].address),
      await balanceOf(devnet.seller.address),
    ];
    const req = await payment(devnet, { version: 1 });
    // Re-sign with the official client so the payload is exactly what x402 clients send.
    const client = new ExactEvmClientV1(privateKeyToAccount(devnet.buyers[0].privateKey));
    req.paymentPayload = (await client.createPaymentPayload(1, req.paymentRequirements as any)) as any;

    expect(await facilitator.verify(req)).toEqual({ isValid: true, payer: devnet.buyers[0].address });
    const settled = await facilitator.settle(req);
    expect(settled).toMatchObject({ success: true, network: "base-sepolia", payer: devnet.buyers[0].address });
    expect(settled.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    const receipt = await createPublicClient({ transport: http(devnet.rpcUrl) }).getTransactionReceipt({
      hash: settled.transaction as Hex,
    });
    expect(receipt.status).toBe("success");
    expect(receipt.from.toLowerCase()).toBe(devnet.relayer.address.toLowerCase());
    expect(await balanceOf(devnet.buyers[0].address)).toBe(buyerBefore - 10_000n);
    expect(await balanceOf(devnet.seller.address)).toBe(sellerBefore + 10_000n);
  });

  test("v2 (signed by @x402/evm's client)", async () => {
    const balanceOf = balances(devnet);
    const sellerBefore = await balanceOf(devnet.seller.address);
    const req = await payment(devnet, { version: 2, amount: 25_000n });
    const client = new ExactEvmClient(privateKeyToAccount(devnet.buyers[1].privateKey));
    const partial = await client.createPaymentPayload(2, req.paymentRequirements as any);
    req.paymentPayload = { ...req.paymentPayload, payload: partial.payload as ExactEvmPayload };

    expect(await facilitator.verify(req)).toMatchObject({ isValid: true, payer: devnet.buyers[1].address });
    const settled = await facilitator.settle(req);
    expect(settled).toMatchObject({ success: true, network: "eip155:84532" });
    expect(await balanceOf(devnet.seller.address)).toBe(sellerBefore + 25_000n);
  });

  test("v1 accepts paying more than maxAmountRequired; v2 wants the exact amount", async () => {
    const over1 = await payment(devnet, { version: 1, sign: { value: 20_000n } });
    expect(await facilitator.verify(over1)).toMatchObject({ isValid: true });
    const under1 = await payment(devnet, { version: 1, sign: { value: 9_999n } });
    expect(await facilitator.verify(under1)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_authorization_value",
    });
    const over2 = await payment(devnet, { version: 2, sign: { value: 20_000n } });
    expect(await facilitator.verify(over2)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_payload_authorization_value_mismatch",
    });
  });

  test("a smart wallet (ERC-1271, bytes signature) pays", async () => {
    const owner = privateKeyToAccount(devnet.buyers[2].privateKey);
    const deployer = createWalletClient({
      account: privateKeyToAccount(devnet.deployer.privateKey),
      transport: http(devnet.rpcUrl),
      chain: devnetChain(devnet.rpcUrl),
    });
    const hash = await deployer.deployContract({
      abi: walletArtifact.abi,
      bytecode: walletArtifact.bytecode as Hex,
      args: [owner.address],
    });
    const pub = createPublicClient({ transport: http(devnet.rpcUrl), pollingInterval: 5 });
    const wallet = (await pub.waitForTransactionReceipt({ hash })).contractAddress!;
    await devnet.mint(wallet, 50_000n);
    // The wallet's isValidSignature checks a plain ECDSA signature by its owner over the digest.
    const { hashTypedData } = await import("viem");
    const req = await payment(devnet, {
      from: wallet,
      signer: async (typed) => owner.sign({ hash: hashTypedData(typed) }),
    });
    expect(await facilitator.verify(req)).toMatchObject({ isValid: true, payer: getAddress(wallet) });
    expect(await facilitator.settle(req)).toMatchObject({ success: true });
    expect(await balances(devnet)(wallet)).toBe(40_000n);
  });
});

describe("refused at verify, nothing sent on chain", () => {
  async function refused(req: Awaited<ReturnType<typeof payment>>, reason: string, f: LocalFacilitator = facilitator) {
    const before = await txCount(devnet, devnet.relayer.address);
    expect(await f.verify(req)).toMatchObject({ isValid: false, invalidReason: reason });
    expect(await f.settle(req)).toMatchObject({ success: false, errorReason: reason, transaction: "" });
    expect(await txCount(devnet, devnet.relayer.address)).toBe(before);
  }

  test("a replayed authorization is rejected at verify (authorizationState), not only at settle", async () => {
    const req = await payment(devnet, { version: 1 });
    expect(await facilitator.settle(req)).toMatchObject({ success: true });
    await refused(req, "invalid_exact_evm_nonce_already_used");
    // Also through a fresh facilitator with no memory of the first settlement.
    await refused(req, "invalid_exact_evm_nonce_already_used", make());
  });

  test("network mismatch between payload and requirement", async () => {
    await refused(await payment(devnet, { version: 1, payloadNetwork: "base" }), "invalid_exact_evm_network_mismatch");
    await refused(
      await payment(devnet, { version: 2, payloadNetwork: "eip155:8453" }),
      "invalid_exact_evm_network_mismatch",
    );
  });

  test("the RPC's chain id is not the requirement network's", async () => {
    const both = make({ networks: ["base", "base-sepolia"] });
    // Signed for Base mainnet (chain 8453), but this RPC is chain 84532.
    const req = await payment(devnet, { version: 1, requirement: { network: "base" }, sign: { chainId: 8453 } });
    await refused(req, "invalid_network", both);
  });

  test("a network the facilitator does not serve", async () => {
    await refused(await payment(devnet, { version: 2, requirement: { network: "eip155:8453" } }), "invalid_network");
  });

  test("expired authorization", async () => {
    const now = BigInt(Math.floor(Date.now() / 1000));
    await refused(
      await payment(devnet, { sign: { validBefore: now - 5n } }),
      "invalid_exact_evm_payload_authorization_valid_before",
    );
  });

  test("authorization not yet valid", async () => {
    const now = BigInt(Math.floor(Date.now() / 1000));
    await refused(
      await payment(devnet, { sign: { validAfter: now + 3600n, validBefore: now + 7200n } }),
      "invalid_exact_evm_payload_authorization_valid_after",
    );
  });

  test("insufficient balance", async () => {
    await refused(await payment(devnet, { buyerKey: generatePrivateKey() }), "invalid_exact_evm_insufficient_balance");
  });

  test("wrong recipient (signed to someone else than payTo)", async () => {
    await refused(
      await payment(devnet, { sign: { to: devnet.relayer.address } }),
      "invalid_exact_evm_recipient_mismatch",
    );
  });

  test("tampered value (signed 10000, claims 20000)", async () => {
    await refused(await payment(devnet, { tamper: { value: "20000" } }), "invalid_exact_evm_signature");
    await refused(
      await payment(devnet, { version: 2, amount: 20_000n, sign: { value: 10_000n }, tamper: { value: "20000" } }),
      "invalid_exact_evm_signature",
    );
  });

  test("wrong EIP-712 name (USD Coin is mainnet's name, not this token's)", async () => {
    await refused(
      await payment(devnet, { requirement: { name: "USD Coin" } }),
      "invalid_exact_evm_token_name_mismatch",
    );
  });

  test("an asset address with no code", async () => {
    const empty = privateKeyToAccount(generatePrivateKey()).address;
    await refused(await payment(devnet, { version: 1, requirement: { asset: empty } }), "asset_not_deployed_contract");
    await refused(await payment(devnet, { version: 2, requirement: { asset: empty } }), "asset_not_deployed_contract");
  });

  test("a malformed request is invalid_payload, with no chain call", async () => {
    const req = await payment(devnet);
    (req.paymentPayload as any).payload.authorization.nonce = "0x1234";
    // every RPC call this facilitator makes goes through the observing proxy
    const rpc = rpcProxy(devnet.rpcUrl);
    try {
      const observed = make({ rpcUrl: rpc.url });
      // the proxy does see this facilitator's chain calls (a valid payment's verify reads the chain)
      expect(await observed.verify(await payment(devnet))).toMatchObject({ isValid: true });
      expect(rpc.state.calls.length).toBeGreaterThan(0);
      rpc.state.calls.length = 0;
      expect(await observed.verify(req)).toMatchObject({ isValid: false, invalidReason: "invalid_payload" });
      expect(await observed.settle(req)).toMatchObject({
        success: false,
        errorReason: "invalid_payload",
        transaction: "",
      });
      expect(rpc.state.calls).toEqual([]);
    } finally {
      rpc.stop();
    }
    await refused(req, "invalid_payload");
  });
});

describe("settlement under load and faults", () => {
  test("20 concurrent settlements from one relayer all succeed (nonce manager)", async () => {
    const f = make();
    const balanceOf = balances(devnet);
    const sellerBefore = await balanceOf(devnet.seller.address);
    const reqs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        payment(devnet, { buyerKey: devnet.buyers[i % 3].privateKey, version: i % 2 ? 2 : 1 }),
      ),
    );
    const results = await Promise.all(reqs.map((r) => f.settle(r)));
    expect(results.filter((r) => r.success)).toHaveLength(20);
    expect(new Set(results.map((r) => r.transaction)).size).toBe(20);
    expect(await balanceOf(devnet.seller.address)).toBe(sellerBefore + 20n * 10_000n);
  });

  test("the same authorization settled twice at once: one transfer, one duplicate_settlement", async () => {
    const req = await payment(devnet);
    const before = await txCount(devnet, devnet.relayer.address);
    const [a, b] = await Promise.all([facilitator.settle(req), facilitator.settle(req)]);
    expect([a.success, b.success].sort()).toEqual([false, true]);
    expect((a.success ? b : a).errorReason).toBe("duplicate_settlement");
    expect(await txCount(devnet, devnet.relayer.address)).toBe(before + 1);
  });

  test("a stuck receipt (mining paused) ends in a bounded failure; a retry waits for the same tx", async () => {
    const f = make({ receiptTimeoutSeconds: 1 });
    const rpc = createPublicClient({ transport: http(devnet.rpcUrl) });
    const req = await payment(devnet);
    await rpc.request({ method: "evm_setAutomine" as any, params: [false] as any });
    try {
      // bounded: with mining paused forever, only the receipt timeout can end this call (the test's limit is 20 s)
      const stuck = await f.settle(req);
      expect(stuck).toMatchObject({ success: false, errorReason: "settlement_pending" });
      expect(stuck.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      // the transaction was sent and is still waiting, not dropped
      expect(await rpc.getTransaction({ hash: stuck.transaction as Hex })).toMatchObject({ blockNumber: null });
      await rpc.request({ method: "evm_mine" as any, params: [] as any });
      const retried = await f.settle(req);
      expect(retried).toMatchObject({ success: true, transaction: stuck.transaction });
    } finally {
      await rpc.request({ method: "evm_setAutomine" as any, params: [true] as any });
    }
  }, 20_000);

  test("an RPC that does not answer is FacilitatorUnavailableError, not an invalid payment", async () => {
    const f = make({ rpcUrl: "http://127.0.0.1:9" });
    const req = await payment(devnet);
    await expect(f.verify(req)).rejects.toBeInstanceOf(FacilitatorUnavailableError);
    await expect(f.settle(req)).rejects.toBeInstanceOf(FacilitatorUnavailableError);
  });

  test("a relayer without gas: unavailable (the gateway's 500), logged for the operator, no transfer", async () => {
    const warnings: string[] = [];
    const broke = createLocalFacilitator({
      rpcUrl: devnet.rpcUrl,
      relayerPrivateKey: generatePrivateKey(),
      settings: { receiptTimeoutSeconds: 5, facilitatorNetworks: ["base-sepolia"] },
      log: { warn: (_fields, message) => warnings.push(message) },
    });
    const req = await payment(devnet);
    const sellerBefore = await balances(devnet)(devnet.seller.address);
    expect(await broke.verify(req)).toMatchObject({ isValid: true });
    await expect(broke.settle(req)).rejects.toBeInstanceOf(FacilitatorUnavailableError);
    expect(warnings).toEqual(["settlement: could not submit"]);
    expect(await balances(devnet)(devnet.seller.address)).toBe(sellerBefore);
    // The authorization is still good: a working relayer settles it.
    expect(await facilitator.settle(req)).toMatchObject({ success: true });
  });

  test("supported lists v1 and v2 kinds of the served networks and the relayer", async () => {
    const s = await make({ networks: ["base-sepolia"] }).supported();
    expect(s.kinds).toEqual([
      { x402Version: 1, scheme: "exact", network: "base-sepolia" },
      { x402Version: 2, scheme: "exact", network: "eip155:84532" },
    ]);
    expect((s as any).signers["eip155:*"]).toEqual([devnet.relayer.address]);
  });
});
