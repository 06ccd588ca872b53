/**
 * Buyers, not proofs (issue 9), end to end: the production server on a local
 * chain with the built-in facilitator, paid by the real x402 clients from npm.
 * A settled purchase grants an entitlement; a stock client that meets the 402
 * again signs a fresh authorization and is served on the entitlement, never
 * charged twice. Policies (`once`, `30d`), revoke and grant, concurrency.
 * Access credentials (old proofs, tokens, sign-in-with-x, payment-identifier)
 * are in access.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodePaymentResponseHeader } from "@x402/fetch";
import axios from "axios";
import { withPaymentInterceptor } from "x402-axios";
import { createSigner, decodeXPaymentResponse } from "x402-fetch";
import { Reason } from "../../src/x402/reasons";
import { ENGINES } from "../support/engines";
import { pgAvailable, testServer } from "../support/postgres";
import { createMarket, type Market, PRICE, same } from "./market";

const FILES = [
  "refetch.bin",
  "refetch-v2.bin",
  "refetch-axios.bin",
  "two-wallets.bin",
  "far-future.bin",
  "once.bin",
  "thirty-days.bin",
  "revoked.bin",
  "granted.bin",
  "crowd.bin",
  "rush.bin",
];

const withPostgres = await pgAvailable("test/e2e/entitlements (PostgreSQL half)");
if (withPostgres) await testServer(); // its initdb takes longer than a hook's time limit
const engines = ENGINES.filter((e) => e !== "postgres" || withPostgres);

describe.each(engines)("on %s", (engine) => {
  let m: Market;
  beforeAll(async () => {
    m = await createMarket({ files: FILES, buyers: 16, engine });
  }, 60_000);
  afterAll(async () => {
    await m?.stop();
  }, 60_000);

  const nonceOf = (header: string) =>
    JSON.parse(Buffer.from(header, "base64").toString()).payload.authorization.nonce as string;

  describe("a buyer downloads again with a stock client: served on the entitlement, never charged twice", () => {
    test("x402-fetch buys, then x402-fetch again (a fresh authorization): same bytes, one charge, the first receipt, no facilitator call", async () => {
      const file = "refetch.bin";
      const buyer = m.buyer();
      const sent: string[] = [];
      const pay = await m.x402Fetch(buyer, sent);
      const [seller0, buyer0] = await Promise.all([m.balanceOf(m.seller), m.balanceOf(buyer.address)]);

      const first = await pay(m.url(file));
      expect(first.status).toBe(200);
      expect(same(new Uint8Array(await first.arrayBuffer()), m.contents[file])).toBe(true);
      const receipt = decodeXPaymentResponse(first.headers.get("x-payment-response")!);
      expect(receipt).toMatchObject({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
      expect(await m.balanceOf(m.seller)).toBe(seller0 + PRICE);

      const calls = m.facilitatorCalls();
      const second = await pay(m.url(file));
      expect(second.status).toBe(200);
      expect(same(new Uint8Array(await second.arrayBuffer()), m.contents[file])).toBe(true);
      // The client did sign a fresh authorization: a second X-PAYMENT with another nonce.
      expect(sent).toHaveLength(2);
      expect(nonceOf(sent[1])).not.toBe(nonceOf(sent[0]));
      // ...which was never settled: the first payment's receipt, nothing sent to the facilitator.
      expect(decodeXPaymentResponse(second.headers.get("x-payment-response")!)).toMatchObject({
        success: true,
        transaction: receipt.transaction,
      });
      expect(calls()).toEqual({ verify: 0, settle: 0 });
      expect(await m.balanceOf(m.seller)).toBe(seller0 + PRICE);
      expect(await m.balanceOf(buyer.address)).toBe(buyer0 - PRICE);
      expect(await m.transfers(buyer.address)).toEqual([receipt.transaction]);
      expect(await m.ledger(buyer.address)).toEqual([
        expect.objectContaining({ state: "settled", cid: m.stack.cids[file], tx_hash: receipt.transaction }),
      ]);
      const [row] = await m.ledger(buyer.address);
      expect(await m.entitlementsOf(buyer.address)).toEqual([
        expect.objectContaining({
          scope: "cid",
          cid: m.stack.cids[file],
          source: "payment",
          payment_id: row.id,
          expires_at: null,
          revoked_at: null,
        }),
      ]);
    });

    test("@x402/fetch (v2) buys, then downloads again free with a fresh authorization", async () => {
      const file = "refetch-v2.bin";
      const buyer = m.buyer();
      const sent: string[] = [];
      const pay = m.v2Fetch(buyer, sent);
      const seller0 = await m.balanceOf(m.seller);

      const first = await pay(m.url(file));
      expect(first.status).toBe(200);
      expect(same(new Uint8Array(await first.arrayBuffer()), m.contents[file])).toBe(true);
      const receipt = decodePaymentResponseHeader(first.headers.get("payment-response")!);
      expect(receipt.success).toBe(true);

      const calls = m.facilitatorCalls();
      const second = await pay(m.url(file));
      expect(second.status).toBe(200);
      expect(same(new Uint8Array(await second.arrayBuffer()), m.contents[file])).toBe(true);
      expect(sent).toHaveLength(2);
      expect(nonceOf(sent[1])).not.toBe(nonceOf(sent[0]));
      expect(decodePaymentResponseHeader(second.headers.get("payment-response")!)).toMatchObject({
        success: true,
        transaction: receipt.transaction,
      });
      expect(calls()).toEqual({ verify: 0, settle: 0 });
      expect(await m.balanceOf(m.seller)).toBe(seller0 + PRICE);
      expect(await m.transfers(buyer.address)).toEqual([receipt.transaction as `0x${string}`]);
      expect((await m.ledger(buyer.address)).map((r) => r.state)).toEqual(["settled"]);
    });

    test("x402-axios buys, then downloads again free with a fresh authorization", async () => {
      const file = "refetch-axios.bin";
      const buyer = m.buyer();
      const signer = await createSigner("base-sepolia", buyer.privateKey);
      const sent: string[] = [];
      const http = axios.create({ timeout: 20_000, responseType: "arraybuffer" });
      http.interceptors.request.use((config) => {
        const header = config.headers?.["X-PAYMENT"];
        if (typeof header === "string") sent.push(header);
        return config;
      });
      // The file's bytes are binary (responseType arraybuffer), but the interceptor reads the 402 as
      // parsed JSON: that body is decoded for it first.
      http.interceptors.response.use(undefined, (error) => {
        const data = error.response?.data;
        if (error.response?.status === 402 && data && typeof data !== "string")
          error.response.data = JSON.parse(Buffer.from(data).toString("utf8"));
        return Promise.reject(error);
      });
      const client = withPaymentInterceptor(http, signer as never);

      const first = await client.get(m.url(file));
      expect(first.status).toBe(200);
      expect(same(new Uint8Array(first.data), m.contents[file])).toBe(true);
      const receipt = decodeXPaymentResponse(first.headers["x-payment-response"]);

      const calls = m.facilitatorCalls();
      const second = await client.get(m.url(file));
      expect(second.status).toBe(200);
      expect(same(new Uint8Array(second.data), m.contents[file])).toBe(true);
      expect(sent).toHaveLength(2);
      expect(nonceOf(sent[1])).not.toBe(nonceOf(sent[0]));
      expect(decodeXPaymentResponse(second.headers["x-payment-response"]).transaction).toBe(receipt.transaction);
      expect(calls()).toEqual({ verify: 0, settle: 0 });
      expect(await m.transfers(buyer.address)).toEqual([receipt.transaction as `0x${string}`]);
      expect((await m.ledger(buyer.address)).map((r) => r.state)).toEqual(["settled"]);
    });

    test("another wallet buying the same file pays normally, once", async () => {
      const file = "two-wallets.bin";
      const [owner, other] = [m.buyer(), m.buyer()];
      expect((await (await m.x402Fetch(owner))(m.url(file))).status).toBe(200);

      const [seller0, other0] = await Promise.all([m.balanceOf(m.seller), m.balanceOf(other.address)]);
      const calls = m.facilitatorCalls();
      const res = await (await m.x402Fetch(other))(m.url(file));
      expect(res.status).toBe(200);
      expect(same(new Uint8Array(await res.arrayBuffer()), m.contents[file])).toBe(true);
      const receipt = decodeXPaymentResponse(res.headers.get("x-payment-response")!);
      expect(receipt.payer?.toLowerCase()).toBe(other.address.toLowerCase());
      expect(calls()).toEqual({ verify: 1, settle: 1 });
      expect(await m.balanceOf(m.seller)).toBe(seller0 + PRICE);
      expect(await m.balanceOf(other.address)).toBe(other0 - PRICE);
      expect(await m.transfers(other.address)).toEqual([receipt.transaction]);
      expect(await m.ledger(other.address)).toEqual([
        expect.objectContaining({ state: "settled", tx_hash: receipt.transaction }),
      ]);
      expect(await m.entitlementsOf(other.address)).toHaveLength(1);
    });
  });

  test("a proof valid until 2^256-1 is refused before any facilitator call: 403 valid_before, no ledger row, no charge", async () => {
    const file = "far-future.bin";
    const buyer = m.buyer();
    const calls = m.facilitatorCalls();
    for (const version of [1, 2] as const) {
      const { header } = await m.proof(buyer, { version, validBefore: 2n ** 256n - 1n });
      const { res, bytes } = await m.get(file, { [version === 1 ? "X-PAYMENT" : "PAYMENT-SIGNATURE"]: header });
      expect(res.status).toBe(403);
      expect(JSON.parse(new TextDecoder().decode(bytes))).toMatchObject({
        x402Version: version,
        reason: Reason.validBefore,
      });
      expect(Reason.validBefore).toBe("invalid_exact_evm_payload_authorization_valid_before");
    }
    expect(calls()).toEqual({ verify: 0, settle: 0 });
    expect(await m.ledger(buyer.address)).toEqual([]);
    expect(await m.entitlementsOf(buyer.address)).toEqual([]);
    expect(await m.transfers(buyer.address)).toEqual([]);
  });

  describe("access policies", () => {
    test("`once`: a second download with a fresh authorization charges again, and no entitlement is written", async () => {
      const file = "once.bin";
      await m.ownInstruction(file, "once");
      const buyer = m.buyer();
      const pay = await m.x402Fetch(buyer);
      const seller0 = await m.balanceOf(m.seller);

      const first = await pay(m.url(file));
      expect(first.status).toBe(200);
      // Nothing stands behind this download but the proof: no token for later.
      expect(first.headers.get("x-access-token")).toBeNull();
      expect(first.headers.get("set-cookie")).toBeNull();
      const second = await pay(m.url(file));
      expect(second.status).toBe(200);
      expect(same(new Uint8Array(await second.arrayBuffer()), m.contents[file])).toBe(true);

      const txs = [first, second].map((r) => decodeXPaymentResponse(r.headers.get("x-payment-response")!).transaction);
      expect(txs[0]).not.toBe(txs[1]);
      expect(await m.transfers(buyer.address)).toEqual(txs);
      expect(await m.balanceOf(m.seller)).toBe(seller0 + 2n * PRICE);
      expect((await m.ledger(buyer.address)).map((r) => [r.state, r.tx_hash])).toEqual(
        txs.map((tx) => ["settled", tx]),
      );
      expect(await m.entitlementsOf(buyer.address)).toEqual([]);
    });

    test("`30d`: served free within the 30 days; once the entitlement has expired, the next download charges", async () => {
      const file = "thirty-days.bin";
      await m.ownInstruction(file, "30d");
      const buyer = m.buyer();
      const pay = await m.x402Fetch(buyer);

      const bought = Math.floor(Date.now() / 1000);
      const first = await pay(m.url(file));
      expect(first.status).toBe(200);
      const [granted] = await m.entitlementsOf(buyer.address);
      expect(granted.expires_at).toBeGreaterThanOrEqual(bought + 30 * 86_400);
      expect(granted.expires_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 30 * 86_400);
      expect(first.headers.get("x-access-token")).toBeString();

      const calls = m.facilitatorCalls();
      expect((await pay(m.url(file))).status).toBe(200);
      expect(calls()).toEqual({ verify: 0, settle: 0 });
      expect(await m.transfers(buyer.address)).toHaveLength(1);

      // Stands for 30 days passing: the entitlement's expiry moved to a second ago.
      await m.stack.sql.run(
        "UPDATE entitlements SET expires_at = ? WHERE id = ?",
        Math.floor(Date.now() / 1000) - 1,
        granted.id,
      );
      const again = await pay(m.url(file));
      expect(again.status).toBe(200);
      expect(same(new Uint8Array(await again.arrayBuffer()), m.contents[file])).toBe(true);
      expect(calls()).toEqual({ verify: 1, settle: 1 });
      const txs = await m.transfers(buyer.address);
      expect(txs).toHaveLength(2);
      expect(decodeXPaymentResponse(again.headers.get("x-payment-response")!).transaction).toBe(txs[1]);
      // The new purchase grants a new 30 days.
      expect(await m.entitlementsOf(buyer.address)).toHaveLength(2);
    });
  });

  describe("creators revoke and grant", () => {
    test("revoke: after DELETE /v3/x402/entitlements/:id the next download charges", async () => {
      const file = "revoked.bin";
      const buyer = m.buyer();
      const pay = await m.x402Fetch(buyer);
      expect((await pay(m.url(file))).status).toBe(200);
      const [granted] = await m.entitlementsOf(buyer.address);

      const listed = await m.api("GET", `/v3/x402/entitlements?payer=${buyer.address}`, undefined, ["read"]);
      expect(listed.status).toBe(200);
      expect(listed.body.data.entitlements).toEqual([
        expect.objectContaining({ id: granted.id, cid: m.stack.cids[file], active: true }),
      ]);
      const revoked = await m.api("DELETE", `/v3/x402/entitlements/${granted.id}`);
      expect(revoked.status).toBe(200);
      expect(revoked.body.data).toMatchObject({ id: granted.id, active: false, revoked_at: expect.any(String) });

      const calls = m.facilitatorCalls();
      const again = await pay(m.url(file));
      expect(again.status).toBe(200);
      expect(calls()).toEqual({ verify: 1, settle: 1 });
      expect(await m.transfers(buyer.address)).toHaveLength(2);
      expect((await m.ledger(buyer.address)).map((r) => r.state)).toEqual(["settled", "settled"]);
    });

    test("grant: POST /v3/x402/entitlements for a stranger, who then downloads with x402-fetch without any transfer", async () => {
      const file = "granted.bin";
      const stranger = m.buyer();
      const body = {
        payer: stranger.address.toLowerCase(),
        payment_instruction_id: m.stack.instruction.id,
        cid: m.stack.cids[file],
        note: "a gift",
      };
      // Granting is a write: a read-only token is refused.
      expect((await m.api("POST", "/v3/x402/entitlements", body, ["read"])).status).toBe(403);
      const granted = await m.api("POST", "/v3/x402/entitlements", body, ["write"]);
      expect(granted.status).toBe(201);
      expect(granted.body.data).toMatchObject({
        payer: stranger.address,
        source: "grant",
        payment_id: null,
        active: true,
      });

      const before = await m.balanceOf(stranger.address);
      const calls = m.facilitatorCalls();
      const res = await (await m.x402Fetch(stranger))(m.url(file));
      expect(res.status).toBe(200);
      expect(same(new Uint8Array(await res.arrayBuffer()), m.contents[file])).toBe(true);
      // No payment behind a gift: no receipt, but a token for later downloads.
      expect(res.headers.get("x-payment-response")).toBeNull();
      expect(res.headers.get("x-access-token")).toBeString();
      expect(calls()).toEqual({ verify: 0, settle: 0 });
      expect(await m.balanceOf(stranger.address)).toBe(before);
      expect(await m.transfers(stranger.address)).toEqual([]);
      expect(await m.ledger(stranger.address)).toEqual([]);
    });
  });

  describe("concurrency", () => {
    test("20 fresh authorizations at once from an entitled payer: all 200, no transfer, no facilitator call", async () => {
      const file = "crowd.bin";
      const buyer = m.buyer();
      expect((await (await m.x402Fetch(buyer))(m.url(file))).status).toBe(200);
      const paid = await m.transfers(buyer.address);
      expect(paid).toHaveLength(1);

      const proofs = await Promise.all(Array.from({ length: 20 }, () => m.proof(buyer)));
      const calls = m.facilitatorCalls();
      const results = await Promise.all(proofs.map((p) => m.get(file, { "X-PAYMENT": p.header })));
      expect(results.map((r) => r.res.status)).toEqual(Array(20).fill(200));
      for (const r of results) {
        expect(same(r.bytes, m.contents[file])).toBe(true);
        expect(decodeXPaymentResponse(r.res.headers.get("x-payment-response")!).transaction).toBe(paid[0]);
      }
      expect(calls()).toEqual({ verify: 0, settle: 0 });
      expect(await m.transfers(buyer.address)).toEqual(paid);
      expect(await m.ledger(buyer.address)).toHaveLength(1);
    });

    test("5 fresh authorizations at once from a payer not yet entitled: exactly one transfer, all 200", async () => {
      const file = "rush.bin";
      const buyer = m.buyer();
      const seller0 = await m.balanceOf(m.seller);
      const proofs = await Promise.all(Array.from({ length: 5 }, () => m.proof(buyer)));
      const calls = m.facilitatorCalls();
      const results = await Promise.all(proofs.map((p) => m.get(file, { "X-PAYMENT": p.header })));
      expect(results.map((r) => r.res.status)).toEqual(Array(5).fill(200));
      for (const r of results) expect(same(r.bytes, m.contents[file])).toBe(true);

      const txs = await m.transfers(buyer.address);
      expect(txs).toHaveLength(1);
      expect(calls().settle).toBe(1);
      expect(await m.balanceOf(m.seller)).toBe(seller0 + PRICE);
      expect(await m.ledger(buyer.address)).toEqual([expect.objectContaining({ state: "settled", tx_hash: txs[0] })]);
      // Every answer names the one payment.
      for (const r of results)
        expect(decodeXPaymentResponse(r.res.headers.get("x-payment-response")!).transaction).toBe(txs[0]);
    });
  });
});
