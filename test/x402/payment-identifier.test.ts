/**
 * The payment-identifier extension (src/x402/payment-identifier.ts): what the
 * 402 advertises, reading the id off a v2 payload as the package's client
 * writes it, and the payload hash that tells a repeat from a conflict.
 */
import { expect, test } from "bun:test";
import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier";
import {
  paymentIdentifierExtension,
  paymentPayloadHash,
  readPaymentIdentifier,
} from "../../src/x402/payment-identifier";

const payloadWith = (extensions: unknown) => ({
  x402Version: 2,
  accepted: { scheme: "exact", network: "eip155:84532", amount: "10000" },
  payload: { signature: "0xabc", authorization: { nonce: "0x01" } },
  extensions,
});

test("the advertised entry: optional, with the spec's schema; one frozen object", () => {
  const entry = paymentIdentifierExtension();
  expect(entry).toEqual({
    info: { required: false },
    schema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: {
        required: { type: "boolean" },
        id: { type: "string", minLength: 16, maxLength: 128, pattern: "^[a-zA-Z0-9_-]+$" },
      },
      required: ["required"],
    },
  });
  expect(paymentIdentifierExtension()).toBe(entry);
  expect(Object.isFrozen(entry) && Object.isFrozen(entry.info)).toBe(true);
});

test("the package's client adds an id to our advertised entry, and we read it back", () => {
  // What a client does with the 402's extensions (decoded from JSON, so a copy of ours).
  const extensions = appendPaymentIdentifierToExtensions(
    { "payment-identifier": structuredClone(paymentIdentifierExtension()) },
    generatePaymentId(),
  );
  const read = readPaymentIdentifier(payloadWith(extensions));
  expect(read).toEqual({ ok: true, id: expect.stringMatching(/^pay_[0-9a-f]{32}$/) });
});

test("absent: no extensions, no entry, or the entry echoed without an id", () => {
  expect(readPaymentIdentifier(payloadWith(undefined))).toBeUndefined();
  expect(readPaymentIdentifier(payloadWith({}))).toBeUndefined();
  expect(readPaymentIdentifier(payloadWith({ "sign-in-with-x": {} }))).toBeUndefined();
  expect(readPaymentIdentifier(payloadWith({ "payment-identifier": { info: { required: false } } }))).toBeUndefined();
  expect(readPaymentIdentifier(null)).toBeUndefined();
  expect(readPaymentIdentifier("a string")).toBeUndefined();
  // Inherited keys are not entries.
  expect(
    readPaymentIdentifier(payloadWith(Object.create({ "payment-identifier": { info: { id: "x".repeat(20) } } }))),
  ).toBeUndefined();
});

test("ids: 16 to 128 of letters, digits, '-' and '_'; anything else is refused with a reason", () => {
  const read = (id: unknown) =>
    readPaymentIdentifier(payloadWith({ "payment-identifier": { info: { required: false, id } } }));
  expect(read("a".repeat(16))).toEqual({ ok: true, id: "a".repeat(16) });
  expect(read(`${"A-b_9".repeat(25)}xyz`)).toMatchObject({ ok: true });
  for (const bad of [
    "a".repeat(15),
    "a".repeat(129),
    "pay_with space__",
    "pay_ünïcödé_____",
    "pay/1234567890123",
    1234567890123456,
    null,
    {},
  ]) {
    // A copy: Bun's toMatchObject writes its matchers into the received object, and the answer is frozen.
    expect({ ...read(bad) }).toMatchObject({
      ok: false,
      reason: "payment_identifier_invalid",
      message: expect.any(String),
    });
  }
  // An entry that is not an object with info: a client meaning to send an id, badly.
  expect(readPaymentIdentifier(payloadWith({ "payment-identifier": "pay_1234567890123456" }))).toMatchObject({
    ok: false,
  });
});

test("the payload hash: key order and absent fields do not matter, any value does", () => {
  const a = payloadWith({ "payment-identifier": { info: { required: false, id: "pay_1234567890123456" } } });
  const reordered = JSON.parse(
    '{"extensions":{"payment-identifier":{"info":{"id":"pay_1234567890123456","required":false}}},"payload":{"authorization":{"nonce":"0x01"},"signature":"0xabc"},"accepted":{"amount":"10000","network":"eip155:84532","scheme":"exact"},"x402Version":2}',
  );
  expect(paymentPayloadHash(reordered)).toBe(paymentPayloadHash(a));
  expect(paymentPayloadHash({ ...a, resource: undefined })).toBe(paymentPayloadHash(a));
  expect(paymentPayloadHash(a)).toMatch(/^[0-9a-f]{64}$/);
  const resigned = { ...a, payload: { ...a.payload, signature: "0xabd" } };
  expect(paymentPayloadHash(resigned)).not.toBe(paymentPayloadHash(a));
});
