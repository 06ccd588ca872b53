/**
 * A whole cidgate (stack.ts) set up for the entitlement tests: one small file
 * per test, a funded wallet per buyer, the real built-in facilitator behind
 * an observer that counts its calls, and what a buyer or creator checks:
 * transfers on chain, ledger rows, entitlement rows, the management API.
 */
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment as wrapFetchV2, x402Client } from "@x402/fetch";
import { Elysia } from "elysia";
import { erc20Abi } from "viem";
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { createSigner, wrapFetchWithPayment } from "x402-fetch";
import { localPublicClient } from "../../src/chain/devnet";
import { createHttpFacilitator } from "../../src/facilitator/client";
import { facilitatorModule } from "../../src/facilitator/routes";
import type { Facilitator } from "../../src/facilitator/types";
import { errors } from "../../src/http/errors";
import { createToken, type Scope } from "../../src/http/token";
import { type ProofOptions, signProof } from "../gateway/fixtures";
import type { Engine } from "../support/engines";
import { createTestStack, STACK_JWT_SECRET } from "./stack";

/** 0.01 USDC: under x402-fetch's default cap, so its maxValue trap is not what these tests are about. */
export const PRICE = 10_000n;

/** Distinct bytes per file (so distinct CIDs), a few KiB each. */
function bytesOf(name: string, seed: number): Uint8Array {
  const head = new TextEncoder().encode(`${name}\n`);
  const out = new Uint8Array(4096);
  out.set(head);
  for (let i = head.length; i < out.length; i++) out[i] = (i * 131 + seed * 17 + 7) & 0xff;
  return out;
}

export interface Buyer {
  address: `0x${string}`;
  privateKey: `0x${string}`;
  account: PrivateKeyAccount;
}

export interface MarketOptions {
  files: string[];
  buyers: number;
  /**
   * The facilitator as a remote one: the built-in facilitator served over
   * HTTP (its production routes, as `cidgate facilitator` serves them) and
   * reached by the gateway through the production HTTP client.
   */
  remote?: boolean;
  /** The stack's database engine (default sqlite). */
  engine?: Engine;
}

/** A bigint column as JS reads it on SQLite: PostgreSQL's driver hands it over as a string. */
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

export async function createMarket(options: MarketOptions) {
  const calls = { verify: 0, settle: 0 };
  const contents = Object.fromEntries(options.files.map((name, i) => [name, bytesOf(name, i)]));
  let remote: { stop(): Promise<void> } | undefined;
  const stack = await createTestStack({
    files: contents,
    amount: PRICE.toString(),
    buyers: options.buyers,
    engine: options.engine,
    wrapFacilitator: (real) => {
      // An observer, not a fake: every call reaches the real built-in facilitator unchanged.
      const counted: Facilitator = {
        verify: (r) => (calls.verify++, real.verify(r)),
        settle: (r) => (calls.settle++, real.settle(r)),
        supported: () => real.supported(),
      };
      if (!options.remote) return counted;
      const server = new Elysia()
        .use(errors)
        .use(facilitatorModule(counted))
        .listen({ port: 0, hostname: "127.0.0.1" });
      remote = {
        async stop() {
          await server.stop(true);
        },
      };
      return createHttpFacilitator({ url: `http://127.0.0.1:${server.server!.port}`, timeoutMs: 20_000 });
    },
  });
  const rpc = localPublicClient(stack.devnet.rpcUrl);
  let used = 0;
  const seller = stack.devnet.seller.address;

  const market = {
    stack,
    contents,
    seller,
    url: (name: string) => `${stack.url}/x402/cid/${stack.cids[name]}`,

    /** A funded wallet no other test has used. */
    buyer(): Buyer {
      const b = stack.devnet.buyers[used++];
      if (!b) throw new Error("out of devnet buyers: raise `buyers`");
      return { address: b.address, privateKey: b.privateKey, account: privateKeyToAccount(b.privateKey) };
    },

    /** Facilitator calls since this was called. */
    facilitatorCalls() {
      const start = { ...calls };
      return () => ({ verify: calls.verify - start.verify, settle: calls.settle - start.settle });
    },

    /** Transactions that moved the token from `from` to the seller, on chain. */
    async transfers(from: `0x${string}`): Promise<`0x${string}`[]> {
      const logs = await rpc.getContractEvents({
        address: stack.devnet.token,
        abi: erc20Abi,
        eventName: "Transfer",
        args: { from, to: seller },
        fromBlock: 0n,
      });
      return logs.map((l) => l.transactionHash);
    },

    balanceOf: stack.balanceOf,

    /** The payer's ledger rows, oldest first. */
    async ledger(payer: string) {
      const rows = await stack.sql.all<{
        id: number;
        state: string;
        cid: string;
        tx_hash: string | null;
        nonce: string;
      }>("SELECT id, state, cid, tx_hash, nonce FROM payments WHERE payer = ? ORDER BY id", payer);
      return rows.map((r) => ({ ...r, id: num(r.id)! }));
    },

    /** The payer's entitlement rows, oldest first. */
    async entitlementsOf(payer: string) {
      const rows = await stack.sql.all<{
        id: number;
        scope: string;
        cid: string | null;
        source: string;
        payment_id: number | null;
        expires_at: number | null;
        revoked_at: string | null;
      }>(
        "SELECT id, scope, cid, source, payment_id, expires_at, revoked_at FROM entitlements WHERE payer = ? ORDER BY id",
        payer,
      );
      return rows.map((r) => ({ ...r, id: num(r.id)!, payment_id: num(r.payment_id), expires_at: num(r.expires_at) }));
    },

    /** The management API, with a token of these scopes. */
    async api(method: string, path: string, body?: unknown, scopes: Scope[] = ["read", "write"]) {
      const token = await createToken(STACK_JWT_SECRET, { scopes, ttlSeconds: 300 });
      const res = await fetch(`${stack.url}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    },

    /**
     * Moves `name` to an instruction of its own with the same price (so a test
     * can change the access policy without touching any other test's file),
     * then sets `access` through the management API, as a creator would.
     */
    async ownInstruction(name: string, access?: string) {
      const cid = stack.cids[name];
      await stack.stores.instructions.detachCid(stack.instruction.id, cid);
      const own = await stack.stores.instructions.create({
        name: `only ${name}`,
        description: "Access fee",
        requirements: stack.instruction.requirements,
      });
      await stack.stores.instructions.attachCid(own.id, cid);
      if (access) {
        const patched = await market.api("PATCH", `/v3/x402/payment_instructions/${own.id}`, { access });
        if (patched.status !== 200 || patched.body.data.access !== access)
          throw new Error(`PATCH access: ${patched.status} ${JSON.stringify(patched.body)}`);
      }
      return own;
    },

    /** x402-fetch (v1, X-PAYMENT): signs a fresh authorization on every 402. `sent` collects its X-PAYMENT headers. */
    async x402Fetch(buyer: Buyer, sent: string[] = []) {
      const signer = await createSigner("base-sepolia", buyer.privateKey);
      return wrapFetchWithPayment(recording(sent, "x-payment"), signer as never, PRICE);
    },

    /** @x402/fetch + @x402/evm (v2, PAYMENT-SIGNATURE), the local token allowed by spend controls. */
    v2Fetch(buyer: Buyer, sent: string[] = []) {
      const client = new x402Client();
      registerExactEvmScheme(client, { signer: buyer.account });
      client.setSpendControls({ allowedAssets: [{ network: "eip155:84532", asset: stack.devnet.token }] });
      return wrapFetchV2(recording(sent, "payment-signature"), client);
    },

    /** A proof signed by hand (the clients sign the same), for windows and payloads no client makes. */
    proof(buyer: Buyer, o: Partial<ProofOptions> = {}) {
      return signProof({
        version: 1,
        account: buyer.account,
        asset: stack.devnet.token,
        payTo: seller,
        amount: PRICE.toString(),
        ...o,
      });
    },

    /** The gateway with the given headers, no client in between. */
    async get(name: string, headers: Record<string, string> = {}) {
      const res = await fetch(market.url(name), { headers });
      return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
    },

    async stop() {
      await stack.stop();
      await remote?.stop();
    },
  };
  return market;
}

export type Market = Awaited<ReturnType<typeof createMarket>>;

/** A fetch that records the value of one request header each time it is sent. */
function recording(sent: string[], header: string): typeof fetch {
  const f = (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input as Request, init);
    const value = request.headers.get(header);
    if (value) sent.push(value);
    return fetch(request);
  };
  return f as typeof fetch;
}

/** Byte-for-byte equality, with a readable failure. */
export const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

/** Seconds until the clock is past `unixSeconds`. */
export async function sleepPast(unixSeconds: number) {
  const ms = (unixSeconds + 1) * 1000 - Date.now();
  if (ms > 0) await Bun.sleep(ms);
}
