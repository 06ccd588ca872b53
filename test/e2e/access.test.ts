/**
 * How a buyer proves, after paying, that the file is theirs (issue 9), end to
 * end on a local chain with the built-in facilitator: an old proof is not a
 * pass once its window has closed; the access token (header and cookie);
 * sign-in-with-x with the real `wrapFetchWithSIWx`; payment-identifier; and
 * what the v2 402 advertises. Re-downloads with fresh authorizations, the
 * policies, revoke and grant are in entitlements.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import {
  appendPaymentIdentifierToExtensions,
  generatePaymentId,
  isPaymentIdentifierExtension,
} from "@x402/extensions/payment-identifier";
import { encodeSIWxHeader, formatSIWEMessage, wrapFetchWithSIWx } from "@x402/extensions/sign-in-with-x";
import { decodeXPaymentResponse } from "x402-fetch";
import { Reason } from "../../src/x402/reasons";
import { ENGINES } from "../support/engines";
import { pgAvailable, testServer } from "../support/postgres";
import { type Buyer, createMarket, type Market, PRICE, same, sleepPast } from "./market";

const FILES = [
  "stale-cookie.bin",
  "once-window.bin",
  "owned-window.bin",
  "token-a.bin",
  "token-b.bin",
  "siwx.bin",
  "payment-id.bin",
  "advertised.bin",
  "siwx-spent.bin",
  "bearer-and-cookie.bin",
];

/**
 * A proof's window as short as the built-in facilitator takes: @x402/evm's
 * verify wants validBefore at least 6 s ahead, at verify and again when it
 * settles, so 8 s leaves room for both.
 */
const SHORT_WINDOW_SECONDS = 8;

const withPostgres = await pgAvailable("test/e2e/access (PostgreSQL half)");
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

  const jsonOf = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes));

  /** The v2 402 of a file, decoded from its PAYMENT-REQUIRED header. */
  async function offerOf(file: string) {
    const { res } = await m.get(file);
    expect(res.status).toBe(402);
    return decodePaymentRequiredHeader(res.headers.get("payment-required")!);
  }

  /** Buys `file` with a proof whose window closes SHORT_WINDOW_SECONDS from now. */
  async function buyWithShortProof(buyer: Buyer, file: string) {
    const validBefore = Math.floor(Date.now() / 1000) + SHORT_WINDOW_SECONDS;
    const proof = await m.proof(buyer, { validBefore });
    const { res, bytes } = await m.get(file, { "X-PAYMENT": proof.header });
    expect(res.status).toBe(200);
    expect(same(bytes, m.contents[file])).toBe(true);
    const receipt = decodeXPaymentResponse(res.headers.get("x-payment-response")!);
    return { proof, validBefore, receipt, token: res.headers.get("x-access-token") };
  }

  describe("an old proof is not a pass", () => {
    test("without an entitlement (`once`): served again within its window, refused (403) after it", async () => {
      const file = "once-window.bin";
      await m.ownInstruction(file, "once");
      const buyer = m.buyer();
      const { proof, validBefore, receipt } = await buyWithShortProof(buyer, file);
      expect(await m.entitlementsOf(buyer.address)).toEqual([]);

      // A buyer whose response was lost presents the same proof again within its window: served, not charged.
      const calls = m.facilitatorCalls();
      const retry = await m.get(file, { "X-PAYMENT": proof.header });
      expect(retry.res.status).toBe(200);
      expect(decodeXPaymentResponse(retry.res.headers.get("x-payment-response")!).transaction).toBe(
        receipt.transaction,
      );

      await sleepPast(validBefore);
      const late = await m.get(file, { "X-PAYMENT": proof.header });
      expect(late.res.status).toBe(403);
      expect(jsonOf(late.bytes)).toMatchObject({ reason: Reason.validBefore });
      expect(late.res.headers.get("x-payment-response")).toBeNull();
      expect(calls()).toEqual({ verify: 0, settle: 0 });
      expect(await m.transfers(buyer.address)).toEqual([receipt.transaction as `0x${string}`]);
      expect(await m.ledger(buyer.address)).toHaveLength(1);
    }, 30_000);

    test("with an entitlement: the old proof is refused after its window, a fresh authorization and the token (Range) still serve", async () => {
      const file = "owned-window.bin";
      const buyer = m.buyer();
      const { proof, validBefore, receipt, token } = await buyWithShortProof(buyer, file);
      expect(token).toBeString();

      await sleepPast(validBefore);
      const calls = m.facilitatorCalls();
      const late = await m.get(file, { "X-PAYMENT": proof.header });
      expect(late.res.status).toBe(403);
      expect(jsonOf(late.bytes)).toMatchObject({ reason: Reason.validBefore });

      const fresh = await m.proof(buyer);
      const again = await m.get(file, { "X-PAYMENT": fresh.header });
      expect(again.res.status).toBe(200);
      expect(same(again.bytes, m.contents[file])).toBe(true);
      expect(decodeXPaymentResponse(again.res.headers.get("x-payment-response")!).transaction).toBe(
        receipt.transaction,
      );

      // A resumed download after the proof's window: the token alone, with Range.
      const resumed = await m.get(file, { Authorization: `Bearer ${token}`, Range: "bytes=100-199" });
      expect(resumed.res.status).toBe(206);
      expect(resumed.res.headers.get("content-range")).toBe(`bytes 100-199/${m.contents[file].length}`);
      expect(same(resumed.bytes, m.contents[file].slice(100, 200))).toBe(true);

      expect(calls()).toEqual({ verify: 0, settle: 0 });
      expect(await m.transfers(buyer.address)).toEqual([receipt.transaction as `0x${string}`]);
    }, 30_000);
  });

  test("access token: header and path-scoped cookie on the paid answer; Bearer with Range and the cookie serve; not another file; revoked, 402", async () => {
    const [fileA, fileB] = ["token-a.bin", "token-b.bin"];
    const buyer = m.buyer();
    const paid = await (await m.x402Fetch(buyer))(m.url(fileA));
    expect(paid.status).toBe(200);
    await paid.arrayBuffer();
    const token = paid.headers.get("x-access-token")!;
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const cookie = paid.headers.get("set-cookie")!;
    const parts = new RegExp(
      `^cidgate_access=([^;]+); Path=/x402/cid/${m.stack.cids[fileA]}; Max-Age=([0-9]+); HttpOnly; SameSite=Lax$`,
    ).exec(cookie);
    expect(parts).not.toBeNull();
    expect(parts![1]).toBe(token);
    // ACCESS_TOKEN_TTL's default, 24 h; PUBLIC_URL is http here, so no Secure.
    expect(Number(parts![2])).toBeGreaterThan(86_400 - 10);
    expect(Number(parts![2])).toBeLessThanOrEqual(86_400);
    expect(cookie).not.toContain("Secure");

    const calls = m.facilitatorCalls();
    const ranged = await m.get(fileA, { Authorization: `Bearer ${token}`, Range: "bytes=0-9" });
    expect(ranged.res.status).toBe(206);
    expect(ranged.res.headers.get("content-range")).toBe(`bytes 0-9/${m.contents[fileA].length}`);
    expect(same(ranged.bytes, m.contents[fileA].slice(0, 10))).toBe(true);

    const byCookie = await m.get(fileA, { Cookie: `cidgate_access=${token}` });
    expect(byCookie.res.status).toBe(200);
    expect(same(byCookie.bytes, m.contents[fileA])).toBe(true);

    // Bound to its CID: file B offers itself as if no token were there.
    const other = await m.get(fileB, { Authorization: `Bearer ${token}` });
    expect(other.res.status).toBe(402);
    expect(same(other.bytes, m.contents[fileB])).toBe(false);
    expect(calls()).toEqual({ verify: 0, settle: 0 });
    expect(await m.transfers(buyer.address)).toHaveLength(1);

    // Signed, not stored, but checked against the entitlement on every use: a revoke takes effect at once.
    const [granted] = await m.entitlementsOf(buyer.address);
    expect((await m.api("DELETE", `/v3/x402/entitlements/${granted.id}`)).status).toBe(200);
    expect((await m.get(fileA, { Authorization: `Bearer ${token}`, Range: "bytes=0-9" })).res.status).toBe(402);
    expect((await m.get(fileA, { Cookie: `cidgate_access=${token}` })).res.status).toBe(402);
  });

  describe("sign-in-with-x with the real client (wrapFetchWithSIWx)", () => {
    test("the owner is served without a charge; a stranger gets 402 and is not charged; a replay is 403 nonce reused; another domain is 403", async () => {
      const file = "siwx.bin";
      const [owner, stranger] = [m.buyer(), m.buyer()];
      const paid = await (await m.x402Fetch(owner))(m.url(file));
      expect(paid.status).toBe(200);
      const receipt = decodeXPaymentResponse(paid.headers.get("x-payment-response")!);

      const sent: string[] = [];
      const recordingFetch = ((input: string | URL | Request, init?: RequestInit) => {
        const request = new Request(input as Request, init);
        const header = request.headers.get("sign-in-with-x");
        if (header) sent.push(header);
        return fetch(request);
      }) as typeof fetch;

      const [owner0, stranger0] = await Promise.all([m.balanceOf(owner.address), m.balanceOf(stranger.address)]);
      const calls = m.facilitatorCalls();
      const signedIn = await wrapFetchWithSIWx(recordingFetch, owner.account)(m.url(file));
      expect(signedIn.status).toBe(200);
      expect(same(new Uint8Array(await signedIn.arrayBuffer()), m.contents[file])).toBe(true);
      expect(sent).toHaveLength(1);
      // Served on the purchase: its receipt (v2, as sign-in-with-x is), a token for later.
      expect(decodePaymentResponseHeader(signedIn.headers.get("payment-response")!).transaction).toBe(
        receipt.transaction,
      );
      expect(signedIn.headers.get("x-access-token")).toBeString();

      const refused = await wrapFetchWithSIWx(recordingFetch, stranger.account)(m.url(file));
      expect(sent).toHaveLength(2);
      expect(refused.status).toBe(402);
      expect(same(new Uint8Array(await refused.arrayBuffer()), m.contents[file])).toBe(false);

      // The owner's header, exactly as the client sent it, once more.
      const replay = await m.get(file, { "SIGN-IN-WITH-X": sent[0] });
      expect(replay.res.status).toBe(403);
      expect(jsonOf(replay.bytes)).toMatchObject({ reason: Reason.siwxNonceReused });

      // The owner's wallet, our challenge, but signed for another site.
      const { info } = (await offerOf(file)).extensions!["sign-in-with-x"] as { info: Record<string, any> };
      const fields = { ...info, domain: "evil.example", chainId: "eip155:84532", type: "eip191" as const };
      const message = formatSIWEMessage(fields as never, owner.address);
      const signature = await owner.account.signMessage({ message });
      const foreign = encodeSIWxHeader({ ...fields, address: owner.address, signature } as never);
      const mismatch = await m.get(file, { "SIGN-IN-WITH-X": foreign });
      expect(mismatch.res.status).toBe(403);
      expect(jsonOf(mismatch.bytes)).toMatchObject({ reason: Reason.siwxDomainMismatch });

      expect(calls()).toEqual({ verify: 0, settle: 0 });
      expect(await m.balanceOf(owner.address)).toBe(owner0);
      expect(await m.balanceOf(stranger.address)).toBe(stranger0);
      expect(await m.transfers(owner.address)).toEqual([receipt.transaction as `0x${string}`]);
      expect(await m.transfers(stranger.address)).toEqual([]);
      expect(await m.ledger(stranger.address)).toEqual([]);
    });
  });

  describe("a sign-in is spent only when it opens the file", () => {
    /** A SIGN-IN-WITH-X header for `file`'s current challenge, signed by `buyer`. */
    async function signInHeader(buyer: Buyer, file: string) {
      const { info } = (await offerOf(file)).extensions!["sign-in-with-x"] as { info: Record<string, any> };
      const fields = { ...info, chainId: "eip155:84532", type: "eip191" as const };
      const signature = await buyer.account.signMessage({ message: formatSIWEMessage(fields as never, buyer.address) });
      return encodeSIWxHeader({ ...fields, address: buyer.address, signature } as never);
    }

    test("HEAD then GET with one sign-in: both answered; a third use is a replay. A stranger's sign-in is 402 every time, never 403", async () => {
      const file = "siwx-spent.bin";
      const [owner, stranger] = [m.buyer(), m.buyer()];
      expect((await (await m.x402Fetch(owner))(m.url(file))).status).toBe(200);
      const calls = m.facilitatorCalls();

      const header = await signInHeader(owner, file);
      const head = await fetch(m.url(file), { method: "HEAD", headers: { "SIGN-IN-WITH-X": header } });
      expect(head.status).toBe(200);
      const get = await m.get(file, { "SIGN-IN-WITH-X": header });
      expect(get.res.status).toBe(200);
      expect(same(get.bytes, m.contents[file])).toBe(true);
      const replay = await m.get(file, { "SIGN-IN-WITH-X": header });
      expect(replay.res.status).toBe(403);
      expect(jsonOf(replay.bytes)).toMatchObject({ reason: Reason.siwxNonceReused });

      const strangers = await signInHeader(stranger, file);
      expect((await m.get(file, { "SIGN-IN-WITH-X": strangers })).res.status).toBe(402);
      expect((await m.get(file, { "SIGN-IN-WITH-X": strangers })).res.status).toBe(402);
      expect(calls()).toEqual({ verify: 0, settle: 0 });
    });
  });

  test("a stale bearer token does not hide a good cookie", async () => {
    const file = "bearer-and-cookie.bin";
    const buyer = m.buyer();
    const paid = await (await m.x402Fetch(buyer))(m.url(file));
    expect(paid.status).toBe(200);
    const token = paid.headers.get("x-access-token")!;
    const res = await m.get(file, { Authorization: "Bearer not-a-token", Cookie: `cidgate_access=${token}` });
    expect(res.res.status).toBe(200);
    expect(same(res.bytes, m.contents[file])).toBe(true);
  });

  test("a cookie that no longer opens the file does not hide a valid sign-in: the entitled wallet is served, not charged", async () => {
    // A browser keeps wallet A's cookie; A was refunded (revoked) and the creator granted the
    // buyer's other wallet B instead. B signs in from that browser, the stale cookie still sent.
    const file = "stale-cookie.bin";
    const [a, b] = [m.buyer(), m.buyer()];
    const paid = await (await m.x402Fetch(a))(m.url(file));
    expect(paid.status).toBe(200);
    const cookie = `cidgate_access=${paid.headers.get("x-access-token")}`;
    const [granted] = await m.entitlementsOf(a.address);
    expect((await m.api("DELETE", `/v3/x402/entitlements/${granted.id}`)).status).toBe(200);
    const gift = { payer: b.address, payment_instruction_id: m.stack.instruction.id, cid: m.stack.cids[file] };
    expect((await m.api("POST", "/v3/x402/entitlements", gift)).status).toBe(201);
    expect((await m.get(file, { Cookie: cookie })).res.status).toBe(402);

    const calls = m.facilitatorCalls();
    const b0 = await m.balanceOf(b.address);
    const res = await wrapFetchWithSIWx(fetch, b.account)(m.url(file), { headers: { Cookie: cookie } });
    expect(res.status).toBe(200);
    expect(same(new Uint8Array(await res.arrayBuffer()), m.contents[file])).toBe(true);
    expect(calls()).toEqual({ verify: 0, settle: 0 });
    expect(await m.balanceOf(b.address)).toBe(b0);
    expect(await m.transfers(b.address)).toEqual([]);
  });

  test("payment-identifier: the same id and payload again is the same answer, no new charge; the same id on another proof is 409", async () => {
    // `once`: no entitlement stands behind the purchase, so the second proof below is
    // decided by its payment id (an entitled payer's fresh authorization is served first).
    const file = "payment-id.bin";
    await m.ownInstruction(file, "once");
    const buyer = m.buyer();
    const offer = await offerOf(file);
    const id = generatePaymentId();

    /** A v2 payment payload as a client builds it: the offer's resource and terms, our id in the echoed extension. */
    async function payload() {
      const { payload } = await m.proof(buyer, { version: 2 });
      const extensions = appendPaymentIdentifierToExtensions(
        { "payment-identifier": structuredClone(offer.extensions!["payment-identifier"]) },
        id,
      );
      const body = { ...payload, resource: offer.resource, accepted: offer.accepts[0], extensions };
      return Buffer.from(JSON.stringify(body)).toString("base64");
    }

    const header = await payload();
    const first = await m.get(file, { "PAYMENT-SIGNATURE": header });
    expect(first.res.status).toBe(200);
    expect(same(first.bytes, m.contents[file])).toBe(true);
    const receipt = first.res.headers.get("payment-response")!;
    expect(decodePaymentResponseHeader(receipt).success).toBe(true);
    const paid = await m.transfers(buyer.address);
    expect(paid).toHaveLength(1);

    const calls = m.facilitatorCalls();
    const again = await m.get(file, { "PAYMENT-SIGNATURE": header });
    expect(again.res.status).toBe(200);
    expect(same(again.bytes, m.contents[file])).toBe(true);
    expect(again.res.headers.get("payment-response")).toBe(receipt);

    const conflicting = await payload();
    expect(conflicting).not.toBe(header);
    const conflict = await m.get(file, { "PAYMENT-SIGNATURE": conflicting });
    expect(conflict.res.status).toBe(409);
    expect(jsonOf(conflict.bytes)).toMatchObject({ error: { code: "payment_identifier_conflict" } });

    expect(calls()).toEqual({ verify: 0, settle: 0 });
    expect(await m.transfers(buyer.address)).toEqual(paid);
    const rows = await m.ledger(buyer.address);
    expect(rows).toEqual([expect.objectContaining({ state: "settled", tx_hash: paid[0] })]);
    // The id stays bound to the first payload and to the payment it ended in.
    expect(await m.stack.stores.paymentIdentifiers.find(id)).toMatchObject({ paymentId: rows[0].id });
  });

  test("the v2 402 advertises sign-in-with-x (PUBLIC_URL's host, a 32-hex nonce) and payment-identifier", async () => {
    const file = "advertised.bin";
    const offer = await offerOf(file);
    const siwx = offer.extensions!["sign-in-with-x"] as any;
    expect(siwx.info).toMatchObject({
      domain: new URL(m.stack.url).host,
      uri: m.url(file),
      version: "1",
      nonce: expect.stringMatching(/^[0-9a-f]{32}$/),
      resources: [m.url(file)],
    });
    expect(siwx.supportedChains).toContainEqual({ chainId: "eip155:84532", type: "eip191" });
    const paymentId = offer.extensions!["payment-identifier"];
    expect(isPaymentIdentifierExtension(paymentId)).toBe(true);
    expect(paymentId).toMatchObject({ info: { required: false } });
    expect(offer.accepts[0]).toMatchObject({ network: "eip155:84532", amount: PRICE.toString() });
  });
});
