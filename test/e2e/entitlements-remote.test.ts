/**
 * The entitlement rules with a remote facilitator (issue 9, "with the
 * built-in facilitator and with a remote one"): the gateway reaches the
 * facilitator over HTTP with its production client, as it would a hosted
 * one. A re-download with a fresh authorization never reaches it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { decodeXPaymentResponse } from "x402-fetch";
import { Reason } from "../../src/x402/reasons";
import { createMarket, type Market, PRICE, same } from "./market";

let m: Market;
beforeAll(async () => {
  m = await createMarket({ files: ["remote.bin", "remote-far.bin"], buyers: 3, remote: true });
});
afterAll(async () => {
  await m?.stop();
});

test("remote facilitator: x402-fetch buys through it, then downloads again free without a request to it", async () => {
  const file = "remote.bin";
  const buyer = m.buyer();
  const pay = await m.x402Fetch(buyer);
  const seller0 = await m.balanceOf(m.seller);

  const buying = m.facilitatorCalls();
  const first = await pay(m.url(file));
  expect(first.status).toBe(200);
  expect(same(new Uint8Array(await first.arrayBuffer()), m.contents[file])).toBe(true);
  expect(buying()).toEqual({ verify: 1, settle: 1 });
  const receipt = decodeXPaymentResponse(first.headers.get("x-payment-response")!);

  const again = m.facilitatorCalls();
  const second = await pay(m.url(file));
  expect(second.status).toBe(200);
  expect(same(new Uint8Array(await second.arrayBuffer()), m.contents[file])).toBe(true);
  expect(decodeXPaymentResponse(second.headers.get("x-payment-response")!).transaction).toBe(receipt.transaction);
  expect(again()).toEqual({ verify: 0, settle: 0 });
  expect(await m.balanceOf(m.seller)).toBe(seller0 + PRICE);
  expect(await m.transfers(buyer.address)).toEqual([receipt.transaction as `0x${string}`]);
  expect((await m.ledger(buyer.address)).map((r) => r.state)).toEqual(["settled"]);
});

test("remote facilitator: the far-future proof is refused (403) without a request to it", async () => {
  const buyer = m.buyer();
  const calls = m.facilitatorCalls();
  const { header } = await m.proof(buyer, { validBefore: 2n ** 256n - 1n });
  const { res, bytes } = await m.get("remote-far.bin", { "X-PAYMENT": header });
  expect(res.status).toBe(403);
  expect(JSON.parse(new TextDecoder().decode(bytes))).toMatchObject({ reason: Reason.validBefore });
  expect(calls()).toEqual({ verify: 0, settle: 0 });
  expect(await m.ledger(buyer.address)).toEqual([]);
});
