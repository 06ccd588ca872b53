/**
 * Abuse (issue 10, item 6), on a real devnet with the real facilitator:
 * correctly signed proofs from fresh, unfunded keys cost at most
 * VERIFY_FAILURES_PER_MINUTE facilitator calls per client address and per
 * payer, their rows are pruned, and X-Forwarded-For counts only with TRUST_PROXY.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { pruneRefusedRows, REFUSED_ROW_RETENTION_MS } from "../../src/ledger/prune";
import { createTestStack, type TestStack } from "../e2e/stack";
import { signProof } from "./fixtures";

const LIMIT = 5;

function stackWith(trustProxy: boolean) {
  const calls = { verify: 0 };
  const made = createTestStack({
    files: { "a.txt": "paid bytes\n" },
    buyers: 1,
    env: { VERIFY_FAILURES_PER_MINUTE: String(LIMIT), TRUST_PROXY: String(trustProxy) },
    wrapFacilitator: (real) => ({ ...real, verify: (r) => (calls.verify++, real.verify(r)) }),
  });
  return { made, calls };
}

async function pay(stack: TestStack, key: `0x${string}`, forwardedFor?: string) {
  const p = await signProof({
    version: 2,
    account: privateKeyToAccount(key),
    asset: stack.devnet.token,
    payTo: stack.devnet.seller.address,
    amount: "10000",
  });
  const headers: Record<string, string> = { "PAYMENT-SIGNATURE": p.header };
  if (forwardedFor) headers["X-Forwarded-For"] = forwardedFor;
  const res = await fetch(`${stack.url}/x402/cid/${stack.cids["a.txt"]}`, { headers });
  return {
    status: res.status,
    type: res.headers.get("content-type"),
    retryAfter: res.headers.get("retry-after"),
    body: await res.text(),
  };
}

const rows = (stack: TestStack, state: string) =>
  stack.db.sqlite.query("SELECT id FROM payments WHERE state = ?").all(state).length;

describe("TRUST_PROXY off (the default)", () => {
  let stack: TestStack;
  let calls: { verify: number };
  beforeAll(async () => {
    const s = stackWith(false);
    stack = await s.made;
    calls = s.calls;
  });
  afterAll(async () => {
    await stack?.stop();
  });

  test("fresh unfunded keys from one client: LIMIT reach the facilitator, the rest get JSON 429 with Retry-After, whatever X-Forwarded-For says", async () => {
    const answers = [];
    for (let i = 0; i < LIMIT * 3; i++) answers.push(await pay(stack, generatePrivateKey(), `198.51.100.${i}`));
    expect(answers.slice(0, LIMIT).map((a) => a.status)).toEqual(Array(LIMIT).fill(403));
    for (const a of answers.slice(LIMIT)) {
      expect(a.status).toBe(429);
      expect(a.type).toContain("application/json");
      expect(Number(a.retryAfter)).toBeGreaterThan(0);
      expect(JSON.parse(a.body).error.code).toBe("too_many_failed_payments");
    }
    expect(calls.verify).toBe(LIMIT);
    expect(rows(stack, "failed")).toBe(LIMIT); // the limited ones never claimed a row
  });

  test("rows refused at verify are pruned once their retention passes, not before", async () => {
    // A funded buyer, from the same loopback client, is over the client limit too (same address).
    expect((await pay(stack, stack.devnet.buyers[0].privateKey)).status).toBe(429);
    expect(await pruneRefusedRows({ payments: stack.stores.payments })).toBe(0); // too recent
    const later = Date.now() + REFUSED_ROW_RETENTION_MS + 1000;
    expect(await pruneRefusedRows({ payments: stack.stores.payments, now: () => later })).toBe(LIMIT);
    expect(rows(stack, "failed")).toBe(0);
  });
});

describe("TRUST_PROXY on", () => {
  let stack: TestStack;
  let calls: { verify: number };
  beforeAll(async () => {
    const s = stackWith(true);
    stack = await s.made;
    calls = s.calls;
  });
  afterAll(async () => {
    await stack?.stop();
  });

  test("the limit is per forwarded client: a flood from one, and a funded buyer at another pays normally", async () => {
    const flood = [];
    for (let i = 0; i < LIMIT * 2; i++) flood.push((await pay(stack, generatePrivateKey(), "203.0.113.9")).status);
    expect(flood.filter((s) => s === 403)).toHaveLength(LIMIT);
    expect(flood.filter((s) => s === 429)).toHaveLength(LIMIT);
    // The last entry is the one the proxy appended: a spoofed first entry does not change the client.
    expect((await pay(stack, generatePrivateKey(), "10.9.9.9, 203.0.113.9")).status).toBe(429);
    const buyer = await pay(stack, stack.devnet.buyers[0].privateKey, "192.0.2.44");
    expect(buyer.status).toBe(200);
    expect(buyer.body).toBe("paid bytes\n");
    expect(rows(stack, "settled")).toBe(1);
  });

  test("the limit is per payer too: one unfunded payer from many addresses is stopped after LIMIT refusals", async () => {
    const key = generatePrivateKey();
    const before = calls.verify;
    const statuses = [];
    for (let i = 0; i < LIMIT * 2; i++) statuses.push((await pay(stack, key, `192.0.2.${100 + i}`)).status);
    expect(statuses.slice(0, LIMIT)).toEqual(Array(LIMIT).fill(403));
    expect(statuses.slice(LIMIT)).toEqual(Array(LIMIT).fill(429));
    expect(calls.verify - before).toBe(LIMIT);
  });
});
