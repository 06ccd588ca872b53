/**
 * Shared set-up for gateway tests: settings over a temporary content folder,
 * real content indexing and real instructions (through the app's stores), an
 * app from createApp over those stores, and proofs signed with a real key (viem), including
 * the deliberately wrong ones the tests need.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAddress, type Hex } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { createApp } from "../../src/app";
import { NETWORKS, type NetworkName } from "../../src/chain/networks";
import { type Db, openDb } from "../../src/db/client";
import type { Facilitator } from "../../src/facilitator/types";
import { createLogger } from "../../src/http/logging";
import { loadSettings, type Settings } from "../../src/settings";
import { createStores, type SqliteStores } from "../../src/stores";
import { randomNonce, signAuthorization } from "../support/authorization";

export const JWT_SECRET = "test-secret-test-secret-test-secret-0123";
export const PUBLIC_URL = "https://gw.example.com";

export interface Fixture {
  dir: string;
  settings: Settings;
  db: Db;
  /**
   * Shared with every app made by makeApp, so its catalog sees the writes made here.
   * SQLite's, so synchronous: `price` and the tests read them without awaiting.
   */
  stores: SqliteStores;
  cleanup(): void;
}

export function fixture(env: Record<string, string> = {}): Fixture {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-gw-"));
  const settings = loadSettings({
    CIDGATE_DB: ":memory:",
    PUBLIC_URL,
    CIDGATE_CONTENT_DIR: join(dir, "content"),
    CIDGATE_CONFIG_DIR: join(dir, "config"),
    FACILITATOR_TIMEOUT_MS: "2000",
    ...env,
  });
  const db = openDb(":memory:");
  return {
    dir,
    settings,
    db,
    stores: createStores(db, settings),
    cleanup() {
      db.sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Writes files into the content folder and indexes them; answers name -> CID. */
export async function addContent(
  f: Fixture,
  files: Record<string, string | Uint8Array>,
): Promise<Record<string, string>> {
  const { mkdirSync } = await import("node:fs");
  mkdirSync(f.settings.contentDir, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(f.settings.contentDir, name), bytes);
  await f.stores.content.index();
  const out: Record<string, string> = {};
  for (const name of Object.keys(files)) {
    const row = f.db.sqlite.query<{ cid: string }, [string]>("SELECT cid FROM content_files WHERE path = ?").get(name);
    if (!row) throw new Error(`${name} was not indexed`);
    out[name] = row.cid;
  }
  return out;
}

export interface Price {
  network?: NetworkName;
  asset?: `0x${string}`;
  payTo: `0x${string}`;
  amount: string;
  description?: string;
}

/** Creates an instruction with these requirements and attaches `cid` to it. */
export function price(f: Fixture, cid: string, prices: Price[], name = "Access fee") {
  const instruction = f.stores.instructions.create({
    name,
    description: "Access fee",
    requirements: prices.map((p) => {
      const network = p.network ?? "base-sepolia";
      return {
        network,
        asset: getAddress(
          p.asset ??
            (network === "base" ? f.settings.usdcAddressBase : f.settings.usdcAddressBaseSepolia) ??
            NETWORKS[network].usdc,
        ),
        pay_to: getAddress(p.payTo),
        amount: p.amount,
        ...(p.description ? { description: p.description } : {}),
      };
    }),
  });
  f.stores.instructions.attachCid(instruction.id, cid);
  return instruction;
}

export function makeApp(f: Fixture, facilitator: Facilitator) {
  return createApp({
    settings: f.settings,
    db: f.db,
    stores: f.stores,
    log: createLogger("silent"),
    jwtSecret: JWT_SECRET,
    facilitator,
  });
}

export const newAccount = (): PrivateKeyAccount => privateKeyToAccount(generatePrivateKey());

export interface ProofOptions {
  account: PrivateKeyAccount;
  version: 1 | 2;
  network?: NetworkName;
  asset: `0x${string}`;
  payTo: `0x${string}`;
  amount: string;
  /** Defaults: value = amount, validAfter = now - 600, validBefore = now + 60, fresh nonce. */
  value?: string;
  validAfter?: number;
  validBefore?: number | bigint;
  nonce?: Hex;
  /** Sign under another EIP-712 domain name or chain (to forge a wrong-network proof). */
  domainName?: string;
  chainId?: number;
  /** Replace the signature after signing (forgeries). */
  signature?: Hex;
  /** The network the payload claims (defaults to `network`). */
  claimedNetwork?: string;
}

/** A payment header value, signed like the x402 clients sign it. */
export async function signProof(
  o: ProofOptions,
): Promise<{ header: string; nonce: Hex; payload: Record<string, unknown> }> {
  const network = o.network ?? "base-sepolia";
  const facts = NETWORKS[network];
  const now = Math.floor(Date.now() / 1000);
  const authorization = {
    from: o.account.address,
    to: getAddress(o.payTo),
    value: o.value ?? o.amount,
    validAfter: String(o.validAfter ?? now - 600),
    validBefore: String(o.validBefore ?? now + 60),
    nonce: o.nonce ?? randomNonce(),
  };
  const signature =
    o.signature ??
    (await signAuthorization(
      o.account,
      {
        name: o.domainName ?? facts.eip712.name,
        version: "2",
        chainId: o.chainId ?? facts.chainId,
        verifyingContract: getAddress(o.asset),
      },
      {
        ...authorization,
        value: BigInt(authorization.value),
        validAfter: BigInt(authorization.validAfter),
        validBefore: BigInt(authorization.validBefore),
      },
    ));
  const payload =
    o.version === 1
      ? { x402Version: 1, scheme: "exact", network: o.claimedNetwork ?? network, payload: { signature, authorization } }
      : {
          x402Version: 2,
          resource: { url: "https://gw.example.com/x", description: "", mimeType: "" },
          accepted: {
            scheme: "exact",
            network: o.claimedNetwork ?? facts.caip2,
            amount: o.amount,
            asset: getAddress(o.asset),
            payTo: getAddress(o.payTo),
            maxTimeoutSeconds: 60,
            extra: { name: facts.eip712.name, version: "2" },
          },
          payload: { signature, authorization },
        };
  return { header: Buffer.from(JSON.stringify(payload)).toString("base64"), nonce: authorization.nonce, payload };
}

/** Wraps a real facilitator and counts the calls that reach it. */
export function spyFacilitator(inner: Facilitator) {
  const calls = { verify: 0, settle: 0, supported: 0 };
  const facilitator: Facilitator = {
    verify: (req) => (calls.verify++, inner.verify(req)),
    settle: (req) => (calls.settle++, inner.settle(req)),
    supported: () => (calls.supported++, inner.supported()),
  };
  return { facilitator, calls };
}

export type Fault = "slow" | "http500" | "redirectLoop" | "settleFails" | "verifyRefuses" | "garbage";

/**
 * A FAKE facilitator HTTP server that injects one fault (never a success):
 * reached through the real HTTP client, so timeouts, redirects and status
 * handling are exercised for real. Counts the requests it gets.
 */
export function faultyFacilitatorServer(fault: Fault, opts: { slowMs?: number } = {}) {
  const hits = { verify: 0, settle: 0 };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (path.endsWith("/verify")) hits.verify++;
      if (path.endsWith("/settle")) hits.settle++;
      switch (fault) {
        case "slow":
          await Bun.sleep(opts.slowMs ?? 3000);
          return Response.json({ isValid: true });
        case "http500":
          return new Response("upstream exploded", { status: 500 });
        case "garbage":
          return new Response("<html>not json</html>", { status: 200 });
        case "redirectLoop":
          // a -> b -> a: a loop, not a chain that ends.
          return new Response(null, {
            status: 307,
            headers: {
              Location: path.includes("/b/")
                ? path.replace("/b/", "/a/")
                : path.replace(/\/(a\/)?(verify|settle|supported)$/, "/b/$2"),
            },
          });
        case "verifyRefuses":
          return Response.json({
            isValid: false,
            invalidReason: "insufficient_funds",
            payer: "0x0000000000000000000000000000000000000001",
          });
        case "settleFails":
          if (path.endsWith("/verify"))
            return Response.json({ isValid: true, payer: "0x0000000000000000000000000000000000000001" });
          return Response.json({
            success: false,
            errorReason: "invalid_transaction_state",
            transaction: "",
            network: "base-sepolia",
          });
      }
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, hits, stop: () => server.stop(true) };
}

/** A loopback URL where nothing listens (a facilitator that is down). */
export async function deadUrl(): Promise<string> {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const url = `http://127.0.0.1:${s.port}`;
  await s.stop(true);
  return url;
}
