import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { HTTPFacilitatorClient } from "@x402/core/http";
import { VerifyError } from "@x402/core/types";
import { Elysia } from "elysia";
import { useFacilitator } from "x402/verify";
import { type Devnet, startDevnet } from "../../src/chain/devnet";
import { createFacilitator } from "../../src/facilitator/create";
import { createLocalFacilitator } from "../../src/facilitator/local";
import { facilitatorModule } from "../../src/facilitator/routes";
import { errors } from "../../src/http/errors";
import { loadSettings } from "../../src/settings";
import { balances, payment, rpcProxy, txCount } from "./helpers";

let devnet: Devnet;
let stopServer: () => Promise<unknown> = async () => {};
let url: string;

beforeAll(async () => {
  devnet = await startDevnet({ buyers: 2 });
  const facilitator = createLocalFacilitator({
    rpcUrl: devnet.rpcUrl,
    relayerPrivateKey: devnet.relayer.privateKey,
    settings: { receiptTimeoutSeconds: 30, facilitatorNetworks: ["base-sepolia"] },
  });
  const app = new Elysia().use(errors).use(facilitatorModule(facilitator)).listen({ port: 0, hostname: "127.0.0.1" });
  stopServer = () => app.stop(true);
  url = `http://127.0.0.1:${app.server!.port}`;
});
afterAll(async () => {
  await stopServer();
  await devnet?.stop();
});

describe("with x402's useFacilitator (v1 client)", () => {
  test("supported, verify, settle a v1 payment; balances move", async () => {
    const { verify, settle, supported } = useFacilitator({ url: url as `${string}://${string}` });
    const kinds = (await supported()).kinds;
    expect(kinds).toContainEqual({ x402Version: 1, scheme: "exact", network: "base-sepolia" });

    const req = await payment(devnet, { version: 1 });
    const sellerBefore = await balances(devnet)(devnet.seller.address);
    const v = await verify(req.paymentPayload as any, req.paymentRequirements as any);
    expect(v).toMatchObject({ isValid: true, payer: devnet.buyers[0].address });
    const s = await settle(req.paymentPayload as any, req.paymentRequirements as any);
    expect(s).toMatchObject({ success: true, network: "base-sepolia" });
    expect(await balances(devnet)(devnet.seller.address)).toBe(sellerBefore + 10_000n);

    // The same proof again: refused at verify with the nonce reason, HTTP 200.
    expect(await verify(req.paymentPayload as any, req.paymentRequirements as any)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_nonce_already_used",
    });
  });
});

describe("with @x402/core's HTTPFacilitatorClient (v2 client)", () => {
  test("getSupported, verify, settle a v2 payment", async () => {
    const client = new HTTPFacilitatorClient({ url, timeoutMs: 10_000 });
    const supported = await client.getSupported();
    expect(supported.kinds).toContainEqual({ x402Version: 2, scheme: "exact", network: "eip155:84532" });
    expect(supported.signers["eip155:*"]).toEqual([devnet.relayer.address]);

    const req = await payment(devnet, { version: 2, buyerKey: devnet.buyers[1].privateKey });
    expect(await client.verify(req.paymentPayload as any, req.paymentRequirements as any)).toMatchObject({
      isValid: true,
    });
    const s = await client.settle(req.paymentPayload as any, req.paymentRequirements as any);
    expect(s).toMatchObject({ success: true, network: "eip155:84532", payer: devnet.buyers[1].address });
    expect(s.transaction).toMatch(/^0x[0-9a-f]{64}$/);
  });

  test("an invalid payment is an answer (HTTP 200), not an error", async () => {
    const client = new HTTPFacilitatorClient({ url, timeoutMs: 10_000 });
    const req = await payment(devnet, {
      version: 2,
      amount: 999_999n,
      sign: { value: 10_000n },
      tamper: { value: "999999" },
    });
    expect(await client.verify(req.paymentPayload as any, req.paymentRequirements as any)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_signature",
    });
    expect(await client.settle(req.paymentPayload as any, req.paymentRequirements as any)).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_signature",
      transaction: "",
    });
  });
});

describe("the chain is down", () => {
  test("verify and settle answer 503 chain_unavailable (not an invalid payment); when the RPC is back, 200", async () => {
    const rpc = rpcProxy(devnet.rpcUrl); // fault: the RPC answers 503 while `down`
    const facilitator = createLocalFacilitator({
      rpcUrl: rpc.url,
      relayerPrivateKey: devnet.relayer.privateKey,
      settings: { receiptTimeoutSeconds: 30, facilitatorNetworks: ["base-sepolia"] },
    });
    const app = new Elysia().use(errors).use(facilitatorModule(facilitator)).listen({ port: 0, hostname: "127.0.0.1" });
    const base = `http://127.0.0.1:${app.server!.port}`;
    try {
      const req = await payment(devnet, { version: 1 });
      const before = await txCount(devnet, devnet.relayer.address);
      rpc.state.down = true;
      for (const path of ["/verify", "/settle"]) {
        const res = await fetch(`${base}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(req),
        });
        const json = (await res.json()) as any;
        expect({ path, status: res.status, code: json.error?.code }).toEqual({
          path,
          status: 503,
          code: "chain_unavailable",
        });
        expect(json).not.toHaveProperty("isValid");
        expect(json).not.toHaveProperty("success");
      }
      expect(rpc.state.calls.length).toBeGreaterThan(0); // the RPC was tried, and failed
      expect(await txCount(devnet, devnet.relayer.address)).toBe(before);
      rpc.state.down = false;
      const res = await fetch(`${base}/verify`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(req),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ isValid: true });
    } finally {
      await app.stop(true);
      rpc.stop();
    }
  });
});

describe("malformed requests: 400 with a reason, nothing on chain", () => {
  async function post(path: string, body: string) {
    const res = await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });
    return { status: res.status, json: (await res.json()) as any };
  }

  test("bad JSON", async () => {
    const before = await txCount(devnet, devnet.relayer.address);
    for (const path of ["/verify", "/settle"]) {
      const { status, json } = await post(path, "{not json");
      expect(status).toBe(400);
      expect(json.error.code).toBe("invalid_json");
    }
    expect(await txCount(devnet, devnet.relayer.address)).toBe(before);
  });

  test("missing fields are named", async () => {
    const req = await payment(devnet, { version: 1 });
    const before = await txCount(devnet, devnet.relayer.address);

    let r = await post("/settle", JSON.stringify({ x402Version: 1, paymentPayload: req.paymentPayload }));
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ success: false, errorReason: "invalid_payload" });
    expect(r.json.error.message).toContain("paymentRequirements");

    const noPayTo = { ...req.paymentRequirements } as any;
    delete noPayTo.payTo;
    r = await post("/verify", JSON.stringify({ ...req, paymentRequirements: noPayTo }));
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ isValid: false, invalidReason: "invalid_payload" });
    expect(r.json.error.message).toContain("paymentRequirements.payTo");

    const noSig = structuredClone(req) as any;
    delete noSig.paymentPayload.payload.signature;
    r = await post("/settle", JSON.stringify(noSig));
    expect(r.status).toBe(400);
    expect(r.json.error.message).toContain("paymentPayload.payload.signature");

    r = await post(
      "/verify",
      JSON.stringify({ ...req, x402Version: 7, paymentPayload: { ...(req.paymentPayload as any), x402Version: 7 } }),
    );
    expect(r.status).toBe(400);
    expect(r.json.error.message).toContain("x402Version");

    expect(await txCount(devnet, devnet.relayer.address)).toBe(before);
  });

  test("the reference client surfaces a 400 as its typed error", async () => {
    const client = new HTTPFacilitatorClient({ url, timeoutMs: 10_000 });
    const req = await payment(devnet, { version: 2 });
    const broken = {
      ...(req.paymentPayload as any),
      payload: { authorization: (req.paymentPayload as any).payload.authorization },
    };
    const error = await client.verify(broken, req.paymentRequirements as any).then(
      () => null,
      (e: unknown) => e,
    );
    // the typed error, carrying the status and the reason our 400 gave (not a bare Error about the body)
    expect(error).toBeInstanceOf(VerifyError);
    expect(error).toMatchObject({ statusCode: 400, invalidReason: "invalid_payload" });
  });
});

describe("createFacilitator(settings)", () => {
  test("FACILITATOR_URL=local settles in-process on RPC_URL with RELAYER_PRIVATE_KEY", async () => {
    const settings = loadSettings({
      FACILITATOR_URL: "local",
      RPC_URL: devnet.rpcUrl,
      RELAYER_PRIVATE_KEY: devnet.relayer.privateKey,
    });
    const f = createFacilitator(settings);
    const req = await payment(devnet, { version: 1 });
    expect(await f.settle(req)).toMatchObject({ success: true, network: "base-sepolia" });
  });

  test("FACILITATOR_URL=local without RPC_URL or key is a settings error naming the variable", () => {
    expect(() => loadSettings({ FACILITATOR_URL: "local", RELAYER_PRIVATE_KEY: devnet.relayer.privateKey })).toThrow(
      /RPC_URL/,
    );
    expect(() => loadSettings({ FACILITATOR_URL: "local", RPC_URL: devnet.rpcUrl })).toThrow(/RELAYER_PRIVATE_KEY/);
  });

  test("a URL reaches `cidgate facilitator` (or any facilitator) over HTTP", async () => {
    const f = createFacilitator(loadSettings({ FACILITATOR_URL: url }));
    const req = await payment(devnet, { version: 2 });
    expect(await f.verify(req)).toMatchObject({ isValid: true });
    expect((await f.supported()).kinds).toContainEqual({ x402Version: 1, scheme: "exact", network: "base-sepolia" });
  });
});
