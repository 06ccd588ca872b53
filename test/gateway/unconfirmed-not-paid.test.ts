/**
 * Unconfirmed settlements that resolve as NOT paid, and a payment being
 * settled by another process, on the real devnet through the gateway's HTTP
 * interface. The first settle is made to fail before it reaches the chain (a
 * FAKE wrapper injects the fault); then the chain is changed the way a buyer
 * or the passing of time would change it (the authorization canceled, its
 * nonce used for another transfer, its validity over), and the same proof is
 * presented again: it is refused for good, nothing is served, nobody is
 * charged, and the row is released.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { createWalletClient, http, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createApp } from "../../src/app";
import { devnetChain, localPublicClient } from "../../src/chain/devnet";
import { FacilitatorUnavailableError } from "../../src/facilitator/types";
import { createLogger } from "../../src/http/logging";
import { createTestStack, STACK_JWT_SECRET, type TestStack } from "../e2e/stack";
import { txCount } from "../facilitator/helpers";
import { signAuthorization } from "../support/authorization";
import { signProof } from "./fixtures";

const FILE = "the paid file\n";
const OTHER = "another paid file\n";

/**
 * Which fault the FAKE wrapper injects into settle: "neverSent" fails it
 * before it reaches the facilitator; "hold" keeps it waiting until released
 * (a settlement still running elsewhere); "none" forwards untouched.
 */
let fault: "none" | "neverSent" | "hold" = "none";
/** For "hold": called when the held settle starts; it goes on once `released` resolves. */
let hold: { enter: () => void; released: Promise<void> } | undefined;
let settleCalls = 0;

let stack: TestStack;

beforeAll(async () => {
  stack = await createTestStack({
    files: { "file.txt": FILE, "other.txt": OTHER },
    buyers: 4,
    wrapFacilitator: (real) => ({
      verify: (r) => real.verify(r),
      async settle(r) {
        settleCalls++;
        if (fault === "neverSent")
          throw new FacilitatorUnavailableError("facilitator settle: no answer within 20000 ms");
        if (fault === "hold" && hold) {
          const h = hold;
          hold = undefined;
          h.enter();
          await h.released;
        }
        return real.settle(r);
      },
      supported: () => real.supported(),
    }),
  });
});
afterAll(async () => {
  await stack?.stop();
});

const tokenAbi = parseAbi([
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)",
]);
const url = (name: string) => `${stack.url}/x402/cid/${stack.cids[name]}`;
const buyer = (i: number) => privateKeyToAccount(stack.devnet.buyers[i].privateKey);
const proof = (i: number, validBefore?: number) =>
  signProof({
    version: 1,
    account: buyer(i),
    asset: stack.devnet.token,
    payTo: stack.devnet.seller.address,
    amount: "10000",
    validBefore,
  });
const rowOf = (i: number, nonce: string) =>
  stack.stores.payments.find({
    network: "base-sepolia",
    asset: stack.devnet.token,
    payer: buyer(i).address,
    nonce: nonce.toLowerCase(),
  })!;
const rpc = () => localPublicClient(stack.devnet.rpcUrl);
const relayer = () =>
  createWalletClient({
    account: privateKeyToAccount(stack.devnet.relayer.privateKey),
    chain: devnetChain(stack.devnet.rpcUrl),
    transport: http(stack.devnet.rpcUrl),
  });
const domain = () => ({
  name: "USDC",
  version: "2",
  chainId: stack.devnet.chainId,
  verifyingContract: stack.devnet.token,
});

/** A second app over the same database and facilitator (another process), logging to `lines`. */
function otherApp(lines: Record<string, unknown>[] = [], facilitatorTimeoutMs = stack.settings.facilitatorTimeoutMs) {
  const log = createLogger("info", {
    write(text: string) {
      for (const line of text.split("\n")) if (line) lines.push(JSON.parse(line));
    },
  });
  return createApp({
    settings: { ...stack.settings, facilitatorTimeoutMs },
    db: stack.db,
    log,
    jwtSecret: STACK_JWT_SECRET,
    facilitator: stack.facilitator,
  });
}

async function get(name: string, header: string, app?: ReturnType<typeof createApp>) {
  const request = new Request(url(name), { headers: { "X-PAYMENT": header } });
  const res = app ? await app.handle(request) : await fetch(request);
  const text = await res.text();
  const receipt = res.headers.get("x-payment-response");
  return {
    status: res.status,
    text,
    receipt: receipt ? (decodePaymentResponseHeader(receipt) as any) : undefined,
    retryAfter: res.headers.get("retry-after"),
  };
}
const reasonOf = (text: string) => JSON.parse(text).reason;

/** The first attempt's settle never reaches the chain: 500, row kept pending (unconfirmed). */
async function unconfirmedFirst(i: number, p: { header: string; nonce: string }) {
  fault = "neverSent";
  const first = await get("file.txt", p.header).finally(() => (fault = "none"));
  expect(first.status).toBe(500);
  expect(first.text).not.toContain(FILE);
  expect(rowOf(i, p.nonce)).toMatchObject({ state: "pending", error: expect.stringContaining("no answer") });
}

/** The same proof again, through an app whose log we read: refused for good, nothing charged, row failed. */
async function resolvesNotPaid(i: number, p: { header: string; nonce: string }, reason: string, detail: string) {
  const balance = await stack.balanceOf(buyer(i).address);
  const sellerBalance = await stack.balanceOf(stack.devnet.seller.address);
  const settles = settleCalls;
  const lines: Record<string, unknown>[] = [];
  const again = await get("file.txt", p.header, otherApp(lines));
  expect(again.status).toBe(403);
  expect(again.text).not.toContain(FILE);
  expect(again.receipt).toBeUndefined();
  expect(reasonOf(again.text)).toBe(reason);
  // the chain answered: no settle was tried for an authorization that can no longer pay
  expect(settleCalls).toBe(settles);
  expect(rowOf(i, p.nonce)).toMatchObject({ state: "failed", error: expect.stringContaining(detail) });
  expect(lines.filter((l) => l.msg === "unconfirmed settlement resolved: not paid")).toHaveLength(1);
  expect(await stack.balanceOf(buyer(i).address)).toBe(balance);
  expect(await stack.balanceOf(stack.devnet.seller.address)).toBe(sellerBalance);
  // and it stays refused: presented once more, still nothing served
  const later = await get("file.txt", p.header);
  expect(later.status).toBe(403);
  expect(later.text).not.toContain(FILE);
}

describe("an unconfirmed settlement resolved as not paid", () => {
  test("the buyer canceled the authorization (cancelAuthorization): 403 payment_already_used, nothing charged", async () => {
    const p = await proof(0);
    await unconfirmedFirst(0, p);
    const signature = await buyer(0).signTypedData({
      domain: domain(),
      types: {
        CancelAuthorization: [
          { name: "authorizer", type: "address" },
          { name: "nonce", type: "bytes32" },
        ],
      },
      primaryType: "CancelAuthorization",
      message: { authorizer: buyer(0).address, nonce: p.nonce },
    });
    const hash = await relayer().writeContract({
      address: stack.devnet.token,
      abi: tokenAbi,
      functionName: "cancelAuthorization",
      args: [buyer(0).address, p.nonce, signature],
    });
    await rpc().waitForTransactionReceipt({ hash });
    await resolvesNotPaid(0, p, "payment_already_used", "the authorization was canceled");
  });

  test("the nonce was used for another transfer: 403 payment_already_used, nothing charged to the seller's benefit", async () => {
    const p = await proof(1);
    await unconfirmedFirst(1, p);
    // the buyer signs another transfer with the same nonce, to someone else, and it is submitted first
    const now = Math.floor(Date.now() / 1000);
    const message = {
      from: buyer(1).address,
      to: stack.devnet.relayer.address,
      value: 1n,
      validAfter: 0n,
      validBefore: BigInt(now + 600),
      nonce: p.nonce,
    };
    const signature = await signAuthorization(buyer(1), domain(), message);
    const hash = await relayer().writeContract({
      address: stack.devnet.token,
      abi: tokenAbi,
      functionName: "transferWithAuthorization",
      args: [
        message.from,
        message.to,
        message.value,
        message.validAfter,
        message.validBefore,
        message.nonce,
        signature,
      ],
    });
    await rpc().waitForTransactionReceipt({ hash });
    await resolvesNotPaid(1, p, "payment_already_used", "the authorization was used for another transfer");
  });

  test("the authorization expired on chain before it was settled: 403 valid_before, nothing charged", async () => {
    // valid for 80 s by the wall clock (within the 60 + 30 s cap), so the gateway's own check passes; the chain's clock is then moved past it
    const p = await proof(2, Math.floor(Date.now() / 1000) + 80);
    await unconfirmedFirst(2, p);
    const snapshot = await rpc().request({ method: "evm_snapshot" as any, params: [] as any });
    try {
      await rpc().request({ method: "evm_increaseTime" as any, params: [3600] as any });
      await rpc().request({ method: "evm_mine" as any, params: [] as any });
      await resolvesNotPaid(
        2,
        p,
        "invalid_exact_evm_payload_authorization_valid_before",
        "expired before it was settled",
      );
    } finally {
      await rpc().request({ method: "evm_revert" as any, params: [snapshot] as any });
    }
  });
});

describe("a payment being settled by another process", () => {
  test("the same proof elsewhere waits for it, then answers 503 pending (never 403); another file is refused; served once it settles", async () => {
    const p = await proof(3);
    const before = await stack.balanceOf(buyer(3).address);
    let enter!: () => void;
    let release!: () => void;
    const entered = new Promise<void>((resolve) => (enter = resolve));
    hold = { enter, released: new Promise<void>((resolve) => (release = resolve)) };
    fault = "hold";
    // process A: the stack's server, its settle held at the facilitator
    const first = get("file.txt", p.header);
    await entered;
    fault = "none";
    expect(rowOf(3, p.nonce).state).toBe("pending");
    const sent = await txCount(stack.devnet, stack.devnet.relayer.address);

    // process B: another app over the same database (a short facilitator timeout: its wait ends while A is held)
    const b = otherApp([], 300);
    const same = await get("file.txt", p.header, b);
    expect(same.status).toBe(503);
    expect(JSON.parse(same.text).error.code).toBe("settlement_pending");
    expect(same.retryAfter).toBe("5");
    expect(same.text).not.toContain(FILE);
    // The same authorization for another file: that is not the buyer's own retry, refused at once.
    const elsewhere = await get("other.txt", p.header, b);
    expect(elsewhere.status).toBe(403);
    expect(reasonOf(elsewhere.text)).toBe("payment_in_progress");
    expect(elsewhere.text).not.toContain(OTHER);
    expect(await txCount(stack.devnet, stack.devnet.relayer.address)).toBe(sent); // B sent nothing

    // Process C (the stack's facilitator timeout) presents it as A goes on: it shares A's outcome.
    const waiting = get("file.txt", p.header, otherApp());
    const settles = settleCalls; // A's settle, held until now
    release();
    const a = await first;
    expect(a.status).toBe(200);
    expect(a.text).toBe(FILE);
    const tx = a.receipt.transaction;

    const c = await waiting;
    expect(c.status).toBe(200);
    expect(c.text).toBe(FILE);
    expect(c.receipt.transaction).toBe(tx);

    // now settled: B serves the same proof with A's transaction, no new charge
    const served = await get("file.txt", p.header, b);
    expect(served.status).toBe(200);
    expect(served.text).toBe(FILE);
    expect(served.receipt.transaction).toBe(tx);
    expect(settleCalls).toBe(settles);
    expect(await stack.balanceOf(buyer(3).address)).toBe(before - 10_000n);
  });
});
