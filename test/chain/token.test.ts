import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  domainSeparator,
  type Hex,
  hashTypedData,
  http,
  parseSignature,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import wallet from "../../dev/artifacts/TestSmartWallet.json";
import usdc from "../../dev/artifacts/USDC.json";
import { type Devnet, devnetChain, MULTICALL3_ADDRESS, startDevnet } from "../../src/chain/devnet";
import {
  type Authorization,
  type AuthorizationKind,
  authorizationTypedData,
  randomNonce,
  signAuthorization,
} from "../support/authorization";

let devnet: Devnet;
let pub: ReturnType<typeof createPublicClient>;
const abi = usdc.abi;

beforeAll(async () => {
  devnet = await startDevnet({ buyers: 2 });
  pub = createPublicClient({ transport: http(devnet.rpcUrl), pollingInterval: 5 });
});
afterAll(() => devnet?.stop());

const now = () => BigInt(Math.floor(Date.now() / 1000));

function walletOf(key: Hex) {
  return createWalletClient({
    account: privateKeyToAccount(key),
    transport: http(devnet.rpcUrl),
    chain: devnetChain(devnet.rpcUrl),
  });
}

/** The test USDC's EIP-712 domain on this chain. */
const domain = () => ({ name: "USDC", version: "2", chainId: devnet.chainId, verifyingContract: devnet.token });

function sign(key: Hex, primaryType: AuthorizationKind, m: Authorization) {
  return signAuthorization(privateKeyToAccount(key), domain(), m, primaryType);
}

/** Sends a call from `key`; resolves to the revert reason, or "ok" once mined successfully. */
async function call(key: Hex, functionName: string, args: unknown[]): Promise<string> {
  const w = walletOf(key);
  try {
    const hash = await w.writeContract({ address: devnet.token, abi, functionName, args } as any);
    const r = await pub.waitForTransactionReceipt({ hash });
    return r.status === "success" ? "ok" : "reverted";
  } catch (e) {
    const revert = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : undefined;
    return (revert as ContractFunctionRevertedError | undefined)?.reason ?? String(e);
  }
}

const balanceOf = (a: Hex) =>
  pub.readContract({ address: devnet.token, abi, functionName: "balanceOf", args: [a] }) as Promise<bigint>;
const used = (a: Hex, n: Hex) =>
  pub.readContract({
    address: devnet.token,
    abi,
    functionName: "authorizationState",
    args: [a, n],
  }) as Promise<boolean>;

function vrs(sig: Hex) {
  const { v, r, s } = parseSignature(sig);
  return [Number(v), r, s];
}

describe("EIP-3009 test USDC", () => {
  test("its EIP-712 domain is Base Sepolia USDC's: name USDC, version 2, this chain, this contract", async () => {
    const onChain = await pub.readContract({ address: devnet.token, abi, functionName: "DOMAIN_SEPARATOR" });
    expect(onChain).toBe(
      domainSeparator({ domain: { name: "USDC", version: "2", chainId: 84532, verifyingContract: devnet.token } }),
    );
  });

  test("transferWithAuthorization (v,r,s) moves funds once, relayed by anyone", async () => {
    const [buyer] = devnet.buyers;
    const m = {
      from: buyer.address,
      to: devnet.seller.address,
      value: 1234n,
      validAfter: 0n,
      validBefore: now() + 60n,
      nonce: randomNonce(),
    };
    const sig = await sign(buyer.privateKey, "TransferWithAuthorization", m);
    const before = await balanceOf(devnet.seller.address);
    const args = [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, ...vrs(sig)];
    expect(await call(devnet.relayer.privateKey, "transferWithAuthorization", args)).toBe("ok");
    expect(await balanceOf(devnet.seller.address)).toBe(before + 1234n);
    expect(await used(buyer.address, m.nonce)).toBe(true);
    expect(await call(devnet.relayer.privateKey, "transferWithAuthorization", args)).toBe(
      "FiatTokenV2: authorization is used or canceled",
    );
  });

  test("transferWithAuthorization (bytes signature) from an EOA", async () => {
    const [, buyer] = devnet.buyers;
    const m = {
      from: buyer.address,
      to: devnet.seller.address,
      value: 1n,
      validAfter: 0n,
      validBefore: now() + 60n,
      nonce: randomNonce(),
    };
    const sig = await sign(buyer.privateKey, "TransferWithAuthorization", m);
    expect(
      await call(devnet.relayer.privateKey, "transferWithAuthorization", [
        m.from,
        m.to,
        m.value,
        m.validAfter,
        m.validBefore,
        m.nonce,
        sig,
      ]),
    ).toBe("ok");
    // Signed for 1, submitted for 2: the digest differs, so the signer does not match.
    const m2 = { ...m, nonce: randomNonce() };
    const sig2 = await sign(buyer.privateKey, "TransferWithAuthorization", m2);
    expect(
      await call(devnet.relayer.privateKey, "transferWithAuthorization", [
        m2.from,
        m2.to,
        2n,
        m2.validAfter,
        m2.validBefore,
        m2.nonce,
        sig2,
      ]),
    ).toBe("FiatTokenV2: invalid signature");
  });

  test("USDC's revert messages: expired, not yet valid, invalid signature, balance", async () => {
    const [buyer] = devnet.buyers;
    const t = now();
    const attempt = async (
      over: Partial<{ validAfter: bigint; validBefore: bigint; value: bigint }>,
      signer: Hex = buyer.privateKey,
    ) => {
      const m = {
        from: buyer.address,
        to: devnet.seller.address,
        value: 5n,
        validAfter: 0n,
        validBefore: t + 60n,
        nonce: randomNonce(),
        ...over,
      };
      const sig = await sign(signer, "TransferWithAuthorization", m);
      return call(devnet.relayer.privateKey, "transferWithAuthorization", [
        m.from,
        m.to,
        m.value,
        m.validAfter,
        m.validBefore,
        m.nonce,
        ...vrs(sig),
      ]);
    };
    expect(await attempt({ validBefore: t - 10n })).toBe("FiatTokenV2: authorization is expired");
    expect(await attempt({ validAfter: t + 3600n, validBefore: t + 7200n })).toBe(
      "FiatTokenV2: authorization is not yet valid",
    );
    expect(await attempt({}, generatePrivateKey())).toBe("FiatTokenV2: invalid signature");
    expect(await attempt({ value: 10n ** 18n })).toBe("ERC20: transfer amount exceeds balance");
  });

  test("receiveWithAuthorization: only the payee may submit it", async () => {
    const [buyer] = devnet.buyers;
    const m = {
      from: buyer.address,
      to: devnet.seller.address,
      value: 7n,
      validAfter: 0n,
      validBefore: now() + 60n,
      nonce: randomNonce(),
    };
    const sig = await sign(buyer.privateKey, "ReceiveWithAuthorization", m);
    const args = [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, ...vrs(sig)];
    expect(await call(devnet.relayer.privateKey, "receiveWithAuthorization", args)).toBe(
      "FiatTokenV2: caller must be the payee",
    );
    const before = await balanceOf(devnet.seller.address);
    expect(await call(devnet.seller.privateKey, "receiveWithAuthorization", args)).toBe("ok");
    expect(await balanceOf(devnet.seller.address)).toBe(before + 7n);
  });

  test("cancelAuthorization makes the nonce unusable", async () => {
    const [buyer] = devnet.buyers;
    const n = randomNonce();
    const cancelSig = await privateKeyToAccount(buyer.privateKey).signTypedData({
      domain: domain(),
      types: {
        CancelAuthorization: [
          { name: "authorizer", type: "address" },
          { name: "nonce", type: "bytes32" },
        ],
      },
      primaryType: "CancelAuthorization",
      message: { authorizer: buyer.address, nonce: n },
    });
    expect(await call(devnet.relayer.privateKey, "cancelAuthorization", [buyer.address, n, cancelSig])).toBe("ok");
    expect(await used(buyer.address, n)).toBe(true);
    const m = {
      from: buyer.address,
      to: devnet.seller.address,
      value: 1n,
      validAfter: 0n,
      validBefore: now() + 60n,
      nonce: n,
    };
    const sig = await sign(buyer.privateKey, "TransferWithAuthorization", m);
    expect(
      await call(devnet.relayer.privateKey, "transferWithAuthorization", [
        m.from,
        m.to,
        m.value,
        m.validAfter,
        m.validBefore,
        m.nonce,
        sig,
      ]),
    ).toBe("FiatTokenV2: authorization is used or canceled");
  });

  test("ERC-1271: a contract wallet's bytes signature is checked by isValidSignature", async () => {
    const owner = privateKeyToAccount(devnet.buyers[1].privateKey);
    const hash = await walletOf(devnet.deployer.privateKey).deployContract({
      abi: wallet.abi,
      bytecode: wallet.bytecode as Hex,
      args: [owner.address],
    });
    const w = (await pub.waitForTransactionReceipt({ hash })).contractAddress!;
    await devnet.mint(w, 100n);
    const m = {
      from: w,
      to: devnet.seller.address,
      value: 60n,
      validAfter: 0n,
      validBefore: now() + 60n,
      nonce: randomNonce(),
    };
    const typed = authorizationTypedData(domain(), m);
    const stranger = await privateKeyToAccount(generatePrivateKey()).sign({ hash: hashTypedData(typed) });
    const args = (sig: Hex) => [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, sig];
    expect(await call(devnet.relayer.privateKey, "transferWithAuthorization", args(stranger))).toBe(
      "FiatTokenV2: invalid signature",
    );
    const good = await owner.sign({ hash: hashTypedData(typed) });
    expect(await call(devnet.relayer.privateKey, "transferWithAuthorization", args(good))).toBe("ok");
    expect(await balanceOf(w)).toBe(40n);
  });

  test("only the deployer mints", async () => {
    expect(await call(devnet.buyers[0].privateKey, "mint", [devnet.buyers[0].address, 1n])).toBe(
      "FiatToken: caller is not a minter",
    );
  });

  test("Multicall3 sits at its canonical address, as on Base", async () => {
    const code = await pub.getCode({ address: MULTICALL3_ADDRESS });
    expect(code?.length ?? 0).toBeGreaterThan(2);
  });
});
