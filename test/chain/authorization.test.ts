/**
 * Reading what became of an EIP-3009 authorization, on the devnet: unused,
 * paid to us (found through AuthorizationUsed, across getLogs windows),
 * canceled, used for another transfer, and a search cut short.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createWalletClient, type Hex, http, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createAuthorizationLookup } from "../../src/chain/authorization";
import { type Devnet, devnetChain, localPublicClient, startDevnet } from "../../src/chain/devnet";
import { randomNonce, signAuthorization } from "../support/authorization";

const tokenAbi = parseAbi([
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)",
]);

let devnet: Devnet;
beforeAll(async () => {
  devnet = await startDevnet({ buyers: 1 });
});
afterAll(async () => {
  await devnet?.stop();
});

const buyer = () => privateKeyToAccount(devnet.buyers[0].privateKey);
const domain = () => ({ name: "USDC", version: "2", chainId: devnet.chainId, verifyingContract: devnet.token });
const relayer = () =>
  createWalletClient({
    account: privateKeyToAccount(devnet.relayer.privateKey),
    chain: devnetChain(devnet.rpcUrl),
    transport: http(devnet.rpcUrl),
  });
const now = () => Math.floor(Date.now() / 1000);

/** Submits a transfer the buyer authorized; returns its nonce and transaction hash. */
async function transfer(to: `0x${string}`, value: bigint) {
  const message = {
    from: buyer().address,
    to,
    value,
    validAfter: 0n,
    validBefore: BigInt(now() + 600),
    nonce: randomNonce(),
  };
  const signature = await signAuthorization(buyer(), domain(), message);
  const hash = await relayer().writeContract({
    address: devnet.token,
    abi: tokenAbi,
    functionName: "transferWithAuthorization",
    args: [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, signature],
  });
  await localPublicClient(devnet.rpcUrl).waitForTransactionReceipt({ hash });
  return { nonce: message.nonce, hash };
}

const query = (nonce: Hex, over: { minValue?: bigint; since?: number } = {}) => ({
  asset: devnet.token,
  authorizer: buyer().address,
  nonce,
  payTo: devnet.seller.address,
  minValue: over.minValue ?? 10_000n,
  since: over.since ?? now() - 60,
});

describe("createAuthorizationLookup", () => {
  test("unused, then paid to us with the transaction that used it", async () => {
    const lookup = createAuthorizationLookup({ rpcUrl: devnet.rpcUrl });
    expect(await lookup.chainId()).toBe(84532);
    const unused = await lookup.find(query(randomNonce()));
    expect(unused.state).toBe("unused");
    if (unused.state === "unused") expect(Math.abs(unused.chainTime - now())).toBeLessThan(120);

    const { nonce, hash } = await transfer(devnet.seller.address, 10_000n);
    expect(await lookup.find(query(nonce))).toEqual({ state: "paid", txHash: hash });
    // Paid less than the row's amount: not this payment.
    expect((await lookup.find(query(nonce, { minValue: 10_001n }))).state).toBe("spent");
  });

  test("used to pay someone else, or canceled: spent", async () => {
    const lookup = createAuthorizationLookup({ rpcUrl: devnet.rpcUrl });
    const elsewhere = await transfer(devnet.relayer.address, 10_000n);
    expect(await lookup.find(query(elsewhere.nonce))).toEqual({
      state: "spent",
      detail: "the authorization was used for another transfer",
    });

    const nonce = randomNonce();
    const signature = await buyer().signTypedData({
      domain: domain(),
      types: {
        CancelAuthorization: [
          { name: "authorizer", type: "address" },
          { name: "nonce", type: "bytes32" },
        ],
      },
      primaryType: "CancelAuthorization",
      message: { authorizer: buyer().address, nonce },
    });
    const hash = await relayer().writeContract({
      address: devnet.token,
      abi: tokenAbi,
      functionName: "cancelAuthorization",
      args: [buyer().address, nonce, signature],
    });
    await localPublicClient(devnet.rpcUrl).waitForTransactionReceipt({ hash });
    expect(await lookup.find(query(nonce))).toEqual({ state: "spent", detail: "the authorization was canceled" });
  });

  test("searches back window by window; a search cut short is unknown, never a guess", async () => {
    const { nonce, hash } = await transfer(devnet.seller.address, 10_000n);
    const rpc = localPublicClient(devnet.rpcUrl);
    await rpc.request({ method: "anvil_mine" as any, params: ["0x14"] as any }); // 20 blocks after it
    expect(await createAuthorizationLookup({ rpcUrl: devnet.rpcUrl, window: 3 }).find(query(nonce))).toEqual({
      state: "paid",
      txHash: hash,
    });
    expect(
      (await createAuthorizationLookup({ rpcUrl: devnet.rpcUrl, window: 3, maxWindows: 2 }).find(query(nonce))).state,
    ).toBe("unknown");
    // A claim said to be later than the transaction (a wrong clock): not found means unknown, not canceled.
    expect(
      (
        await createAuthorizationLookup({ rpcUrl: devnet.rpcUrl, window: 3, slackSeconds: 0 }).find(
          query(nonce, { since: now() + 3600 }),
        )
      ).state,
    ).toBe("unknown");
  });
});
