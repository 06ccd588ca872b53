/**
 * The gateway's HTTP behaviour that needs no chain: 404s, the 402 and its
 * headers, HEAD, CORS, refusals of bad proofs before any facilitator call,
 * and every way a broken facilitator can fail (fakes that inject one fault
 * each, reached through the real HTTP client). Paying for real is in
 * paid.test.ts and test/e2e/.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { createHttpFacilitator } from "../../src/facilitator/client";
import type { Facilitator } from "../../src/facilitator/types";
import {
  addContent,
  deadUrl,
  type Fault,
  type Fixture,
  faultyFacilitatorServer,
  fixture,
  makeApp,
  newAccount,
  PUBLIC_URL,
  price,
  signProof,
  spyFacilitator,
} from "./fixtures";

const TOKEN = "0x036CbD53842c5426634e7929541eC2318f3dCF7e" as const;
const SECRET_TEXT = "# Paid article\n\nThe secret is 42.\n";
const seller = newAccount().address;
const buyer = newAccount();

let f: Fixture;
let cids: Record<string, string>;
const stops: (() => unknown)[] = [];

beforeAll(async () => {
  f = fixture({ FACILITATOR_TIMEOUT_MS: "400" });
  cids = await addContent(f, { "article.md": SECRET_TEXT, "unpriced.txt": "free? no: unpriced" });
  price(f, cids["article.md"], [{ payTo: seller, amount: "10000", asset: TOKEN }]);
  // A CID with an instruction but no file.
  price(
    f,
    "bafkreidgvpkjawlxz6sffxzwgooowe5yt7i6wsyg236mfoks77nywkptdq",
    [{ payTo: seller, amount: "1", asset: TOKEN }],
    "orphan",
  );
});
afterAll(() => {
  for (const s of stops) s();
  f.cleanup();
});

/** An app whose facilitator is reached over HTTP at `url` (a fake that injects a fault), with call counts. */
function appWith(facilitator: Facilitator) {
  const spy = spyFacilitator(facilitator);
  return { app: makeApp(f, spy.facilitator), calls: spy.calls };
}

function faultyApp(fault: Fault) {
  const server = faultyFacilitatorServer(fault, { slowMs: 3000 });
  stops.push(server.stop);
  return { ...appWith(createHttpFacilitator({ url: server.url, timeoutMs: f.settings.facilitatorTimeoutMs })), server };
}

const path = () => `/x402/cid/${cids["article.md"]}`;
const req = (p: string, init: RequestInit = {}) => new Request(`http://localhost${p}`, init);

async function proofHeader(version: 1 | 2, over: Partial<Parameters<typeof signProof>[0]> = {}) {
  return (await signProof({ version, account: buyer, asset: TOKEN, payTo: seller, amount: "10000", ...over })).header;
}

describe("404", () => {
  test("a bad CID, an unknown CID, a CID without a file, a file without an instruction", async () => {
    for (const p of [
      "/x402/cid/not-a-cid",
      "/x402/cid/bafkreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      "/x402/cid/bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku",
      "/x402/cid/bafkreidgvpkjawlxz6sffxzwgooowe5yt7i6wsyg236mfoks77nywkptdq",
      `/x402/cid/${cids["unpriced.txt"]}`,
    ]) {
      const res = await appWith({} as Facilitator).app.handle(req(p));
      expect(res.status).toBe(404);
      expect(((await res.json()) as any).error.code).toBe("not_found");
    }
  });

  test("no path reaches outside the content folder", async () => {
    for (const p of [
      "/x402/cid/..%2F..%2Fetc%2Fpasswd",
      "/x402/cid/../../package.json",
      `/x402/cid/${cids["article.md"]}/../../x`,
    ]) {
      const res = await appWith({} as Facilitator).app.handle(req(p));
      expect(res.status).toBe(404);
      expect(await res.text()).not.toContain("root:");
    }
  });
});

describe("402", () => {
  test("no proof: v1 body and v2 PAYMENT-REQUIRED header, resource from PUBLIC_URL, the file's type", async () => {
    const { app, calls } = appWith({} as Facilitator);
    const res = await app.handle(req(path()));
    expect(res.status).toBe(402);
    expect(res.headers.get("content-type")).toContain("application/json");
    const body = (await res.json()) as any;
    expect(body.x402Version).toBe(1);
    expect(body.error).toContain("X-PAYMENT");
    expect(body.accepts).toEqual([
      {
        scheme: "exact",
        network: "base-sepolia",
        maxAmountRequired: "10000",
        resource: `${PUBLIC_URL}${path()}`,
        description: "Access fee",
        mimeType: "text/markdown",
        payTo: seller,
        maxTimeoutSeconds: 60,
        asset: TOKEN,
        extra: { name: "USDC", version: "2" },
      },
    ]);
    const v2 = decodePaymentRequiredHeader(res.headers.get("payment-required")!) as any;
    expect(v2.x402Version).toBe(2);
    expect(v2.resource).toEqual({
      url: `${PUBLIC_URL}${path()}`,
      description: "Access fee",
      mimeType: "text/markdown",
    });
    expect(v2.accepts[0]).toMatchObject({
      network: "eip155:84532",
      amount: "10000",
      payTo: seller,
      asset: TOKEN,
      maxTimeoutSeconds: 60,
    });
    expect(res.headers.get("access-control-expose-headers")).toContain("PAYMENT-REQUIRED");
    expect(calls.verify + calls.settle).toBe(0);
  });

  test("the CID in another spelling (base36) is the same resource", async () => {
    const { CID } = await import("multiformats/cid");
    const { base36 } = await import("multiformats/bases/base36");
    const b36 = CID.parse(cids["article.md"]).toString(base36);
    const res = await appWith({} as Facilitator).app.handle(req(`/x402/cid/${b36}`));
    expect(res.status).toBe(402);
    expect(((await res.json()) as any).accepts[0].resource).toBe(`${PUBLIC_URL}${path()}`);
  });

  test("a price change shows in the next 402 (no stale cache)", async () => {
    const { app } = appWith({} as Facilitator);
    const cid = (await addContent(f, { "changing.txt": "price moves" }))["changing.txt"];
    const instr = price(f, cid, [{ payTo: seller, amount: "10000", asset: TOKEN }], "changing");
    expect(((await (await app.handle(req(`/x402/cid/${cid}`))).json()) as any).accepts[0].maxAmountRequired).toBe(
      "10000",
    );
    f.stores.instructions.update(instr.id, {
      requirements: [{ ...f.stores.instructions.forCid(cid)!.requirements[0], amount: "20000" }],
    });
    expect(((await (await app.handle(req(`/x402/cid/${cid}`))).json()) as any).accepts[0].maxAmountRequired).toBe(
      "20000",
    );
  });

  test("HEAD answers like GET without a body", async () => {
    const { app } = appWith({} as Facilitator);
    const res = await app.handle(req(path(), { method: "HEAD" }));
    expect(res.status).toBe(402);
    expect(res.headers.get("payment-required")).toBeTruthy();
    expect(await res.text()).toBe("");
  });

  test("CORS preflight allows the proof headers; responses expose the payment headers", async () => {
    const { app } = appWith({} as Facilitator);
    const res = await app.handle(
      req(path(), {
        method: "OPTIONS",
        headers: {
          Origin: "https://shop.example",
          "Access-Control-Request-Method": "GET",
          "Access-Control-Request-Headers": "x-payment, payment-signature",
        },
      }),
    );
    expect(res.status).toBe(204);
    const allowed = res.headers.get("access-control-allow-headers")!.toLowerCase();
    expect(allowed).toContain("x-payment");
    expect(allowed).toContain("payment-signature");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    const got = await app.handle(req(path(), { headers: { Origin: "https://shop.example" } }));
    const exposed = got.headers.get("access-control-expose-headers")!;
    for (const h of ["PAYMENT-REQUIRED", "X-PAYMENT-RESPONSE", "PAYMENT-RESPONSE"]) expect(exposed).toContain(h);
  });
});

describe("403 before any facilitator call", () => {
  async function expect403(header: Record<string, string>, reason: string, version: 1 | 2) {
    const { app, calls } = appWith({} as Facilitator);
    const res = await app.handle(req(path(), { headers: header }));
    expect(res.status).toBe(403);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ x402Version: version, reason });
    expect(typeof body.error).toBe("string");
    expect(body.accepts).toHaveLength(1);
    expect(JSON.stringify(body)).not.toContain("The secret is 42");
    expect(calls.verify + calls.settle).toBe(0);
  }

  test("undecodable", async () => {
    await expect403({ "X-PAYMENT": "garbage!!" }, "invalid_payload", 1);
    await expect403({ "PAYMENT-SIGNATURE": Buffer.from("{}").toString("base64") }, "invalid_payload", 2);
  });

  test("forged signature (facilitator never called)", async () => {
    await expect403(
      { "X-PAYMENT": await proofHeader(1, { signature: `0x${"11".repeat(65)}` }) },
      "invalid_exact_evm_signature",
      1,
    );
    // Signed by a key that is not `from`: take another buyer's signature over the same fields.
    const nonce = `0x${"33".repeat(32)}` as const;
    const validBefore = Math.floor(Date.now() / 1000) + 60;
    const mallory = await signProof({
      version: 2,
      account: newAccount(),
      asset: TOKEN,
      payTo: seller,
      amount: "10000",
      nonce,
      validBefore,
    });
    const signature = (mallory.payload.payload as { signature: `0x${string}` }).signature;
    await expect403(
      { "PAYMENT-SIGNATURE": await proofHeader(2, { nonce, validBefore, signature }) },
      "invalid_exact_evm_signature",
      2,
    );
  });

  test("a signature of an odd number of hex digits is not bytes: refused, never sent on as a smart-wallet signature", async () => {
    await expect403({ "X-PAYMENT": await proofHeader(1, { signature: `0x${"1".repeat(133)}` }) }, "invalid_payload", 1);
    await expect403(
      { "PAYMENT-SIGNATURE": await proofHeader(2, { signature: `0x${"1".repeat(301)}` }) },
      "invalid_payload",
      2,
    );
  });

  test("underpaid, wrong recipient, wrong network, expired", async () => {
    const now = Math.floor(Date.now() / 1000);
    await expect403(
      { "X-PAYMENT": await proofHeader(1, { value: "9999" }) },
      "invalid_exact_evm_authorization_value",
      1,
    );
    await expect403(
      { "X-PAYMENT": await proofHeader(1, { payTo: newAccount().address }) },
      "invalid_exact_evm_recipient_mismatch",
      1,
    );
    await expect403({ "X-PAYMENT": await proofHeader(1, { network: "base" }) }, "invalid_network", 1);
    await expect403(
      { "PAYMENT-SIGNATURE": await proofHeader(2, { validBefore: now - 5 }) },
      "invalid_exact_evm_payload_authorization_valid_before",
      2,
    );
  });

  test("a validBefore beyond now + maxTimeoutSeconds + 30 s is refused: one payment cannot become a pass", async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const validBefore of [now + 60 + 31 + 5, 4_000_000_000]) {
      await expect403(
        { "X-PAYMENT": await proofHeader(1, { validBefore }) },
        "invalid_exact_evm_payload_authorization_valid_before",
        1,
      );
    }
    // the far-future proof of issue 9: validBefore = 2^256 - 1
    await expect403(
      { "PAYMENT-SIGNATURE": await proofHeader(2, { validBefore: 2n ** 256n - 1n }) },
      "invalid_exact_evm_payload_authorization_valid_before",
      2,
    );
  });

  test("a network named like an Object.prototype member is an unknown network, not a 500", async () => {
    for (const claimedNetwork of ["constructor", "__proto__", "toString"]) {
      await expect403({ "X-PAYMENT": await proofHeader(1, { claimedNetwork }) }, "invalid_network", 1);
      await expect403({ "PAYMENT-SIGNATURE": await proofHeader(2, { claimedNetwork }) }, "invalid_network", 2);
    }
  });

  test("header names are case-insensitive (the seed writes X-Payment)", async () => {
    await expect403({ "X-Payment": await proofHeader(1, { value: "1" }) }, "invalid_exact_evm_authorization_value", 1);
  });
});

describe("a broken facilitator: 500 or 403, no content, the proof can be presented again", () => {
  async function pay(app: ReturnType<typeof makeApp>, header: string, version: 1 | 2) {
    const res = await app.handle(
      req(path(), { headers: { [version === 1 ? "X-PAYMENT" : "PAYMENT-SIGNATURE"]: header } }),
    );
    const text = await res.text();
    expect(text).not.toContain("The secret is 42");
    expect(res.headers.get("x-payment-response")).toBeNull();
    expect(res.headers.get("payment-response")).toBeNull();
    return { status: res.status, body: JSON.parse(text) };
  }

  test.each([
    ["down", 500],
    ["slow", 500],
    ["http500", 500],
    ["redirectLoop", 500],
    ["garbage", 500],
    ["verifyRefuses", 403],
    ["settleFails", 403],
  ] as const)("%s -> %i", async (fault, status) => {
    const faulty = fault === "down" ? undefined : faultyApp(fault as Fault);
    const { app, calls } = faulty ?? appWith(createHttpFacilitator({ url: await deadUrl(), timeoutMs: 400 }));
    const version = status === 500 ? 1 : 2;
    const signed = await signProof({ version, account: buyer, asset: TOKEN, payTo: seller, amount: "10000" });
    const first = await pay(app, signed.header, version);
    expect(first.status).toBe(status);
    // slow: cut at FACILITATOR_TIMEOUT_MS during verify (the fault answers later), so no settle was ever sent
    if (fault === "slow") expect(faulty?.server.hits).toEqual({ verify: 1, settle: 0 });
    if (status === 500) expect(first.body.error.code).toBe("facilitator_unavailable");
    else expect(first.body.reason).toBe(fault === "settleFails" ? "invalid_transaction_state" : "insufficient_funds");
    const row = f.stores.payments.find({
      network: "base-sepolia",
      asset: TOKEN,
      payer: buyer.address,
      nonce: signed.nonce.toLowerCase(),
    })!;
    expect(row.state).toBe("failed");
    expect(row.txHash).toBeNull();
    // Released: the same proof reaches the facilitator again instead of being refused as used.
    const before = calls.verify;
    const second = await pay(app, signed.header, version);
    expect(second.status).toBe(status);
    expect(calls.verify).toBe(before + 1);
  });
});

describe("concurrency and files", () => {
  test("concurrent requests with one proof share one facilitator attempt and its outcome", async () => {
    const { app, server } = faultyApp("slow");
    const signed = await signProof({ version: 1, account: buyer, asset: TOKEN, payTo: seller, amount: "10000" });
    const statuses = await Promise.all(
      Array.from({ length: 10 }, () =>
        app.handle(req(path(), { headers: { "X-PAYMENT": signed.header } })).then((r) => r.status),
      ),
    );
    expect(statuses).toEqual(Array(10).fill(500));
    expect(server.hits.verify).toBe(1);
  });

  test("a file gone since it was indexed is 404 before anyone is charged", async () => {
    const { rmSync } = await import("node:fs");
    const { join } = await import("node:path");
    const cid = (await addContent(f, { "vanishing.txt": "here today" }))["vanishing.txt"];
    price(f, cid, [{ payTo: seller, amount: "10000", asset: TOKEN }], "vanishing");
    rmSync(join(f.settings.contentDir, "vanishing.txt"));
    const { app, server } = faultyApp("settleFails");
    const res = await app.handle(req(`/x402/cid/${cid}`, { headers: { "X-PAYMENT": await proofHeader(1) } }));
    expect(res.status).toBe(404);
    expect(server.hits.verify + server.hits.settle).toBe(0);
  });
});
