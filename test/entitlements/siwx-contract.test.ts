/**
 * Sign-in-with-x from a smart wallet (EIP-1271) on a real local chain: the
 * test wallet contract (dev/contracts/TestSmartWallet.sol) accepts its
 * owner's signature over the EIP-191 hash; `verifyContract` asks the chain
 * through viem's `verifyMessage`. Without it, the same header is refused.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { encodeSIWxHeader, formatSIWEMessage } from "@x402/extensions/sign-in-with-x";
import { createWalletClient, getAddress, type Hex, hashMessage, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import walletArtifact from "../../dev/artifacts/TestSmartWallet.json";
import { type Devnet, devnetChain, localPublicClient, startDevnet } from "../../src/chain/devnet";
import { openDb } from "../../src/db/client";
import { type ContractVerifier, createSiwx } from "../../src/entitlements/siwx";
import { createSiwxNonceStore } from "../../src/entitlements/siwx-nonces";

const PUBLIC_URL = "https://gw.example.com";
const RESOURCE = `${PUBLIC_URL}/x402/cid/bafkreiaaaa`;

let devnet: Devnet;
let wallet: `0x${string}`;
const db = openDb(":memory:");

beforeAll(async () => {
  devnet = await startDevnet({ buyers: 1 });
  const deployer = createWalletClient({
    account: privateKeyToAccount(devnet.deployer.privateKey),
    transport: http(devnet.rpcUrl),
    chain: devnetChain(devnet.rpcUrl),
  });
  const hash = await deployer.deployContract({
    abi: walletArtifact.abi,
    bytecode: walletArtifact.bytecode as Hex,
    args: [privateKeyToAccount(devnet.buyers[0].privateKey).address],
  });
  const receipt = await localPublicClient(devnet.rpcUrl).waitForTransactionReceipt({ hash });
  wallet = getAddress(receipt.contractAddress as string);
}, 30_000);

afterAll(async () => {
  db.sqlite.close();
  await devnet?.stop();
});

test("a smart wallet signs in through verifyContract, and not without it", async () => {
  const owner = privateKeyToAccount(devnet.buyers[0].privateKey);
  const client = localPublicClient(devnet.rpcUrl);
  const calls: number[] = [];
  const verifyContract: ContractVerifier = async ({ address, message, signature, chainId }) => {
    calls.push(chainId);
    return client.verifyMessage({ address, message, signature });
  };
  const nonces = createSiwxNonceStore(db);
  const withRpc = createSiwx({ publicUrl: PUBLIC_URL, secret: "s", nonces, verifyContract });
  const withoutRpc = createSiwx({ publicUrl: PUBLIC_URL, secret: "s", nonces });

  const info = withRpc.challenge(RESOURCE);
  const fields = { ...info.info, chainId: "eip155:84532", type: "eip191" as const };
  const message = formatSIWEMessage(fields, wallet);
  // What a smart-wallet SDK returns: the owner's signature, checked by the wallet contract.
  const signature = await owner.sign({ hash: hashMessage(message) });
  const header = encodeSIWxHeader({ ...fields, address: wallet, signature });

  expect(await withoutRpc.verify(header, RESOURCE)).toMatchObject({ ok: false, reason: "siwx_invalid_signature" });
  expect(await withRpc.verify(header, RESOURCE)).toMatchObject({ ok: true, address: wallet });
  expect(calls).toEqual([84532]);

  // A stranger's signature for the wallet: the contract says no.
  const stranger = privateKeyToAccount(`0x${"42".repeat(32)}`);
  const forged = encodeSIWxHeader({
    ...fields,
    address: wallet,
    signature: await stranger.sign({ hash: hashMessage(message) }),
  });
  expect(await withRpc.verify(forged, RESOURCE)).toMatchObject({ ok: false, reason: "siwx_invalid_signature" });
}, 20_000);
