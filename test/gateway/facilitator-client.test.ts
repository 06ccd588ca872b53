import { afterAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync, verify } from "node:crypto";
import { createHttpFacilitator } from "../../src/facilitator/client";
import { createFacilitator } from "../../src/facilitator/create";
import type { FacilitatorRequest } from "../../src/facilitator/types";
import { FacilitatorUnavailableError } from "../../src/facilitator/types";
import { loadSettings } from "../../src/settings";
import { deadUrl, type Fault, faultyFacilitatorServer } from "./fixtures";

// Not a valid payment: the client forwards whatever it is given, and these tests look only at the transport.
const request = {
  x402Version: 1 as const,
  paymentPayload: { a: 1 },
  paymentRequirements: { b: 2 },
} as unknown as FacilitatorRequest;
const servers: { stop(): unknown }[] = [];
afterAll(() => {
  for (const s of servers) s.stop();
});

function serve(fetch: (req: Request) => Response | Promise<Response>) {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch });
  servers.push({ stop: () => s.stop(true) });
  return `http://127.0.0.1:${s.port}`;
}

async function unavailable(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(FacilitatorUnavailableError);
    return (e as Error).message;
  }
  throw new Error("expected FacilitatorUnavailableError");
}

describe("createHttpFacilitator", () => {
  test("posts the x402 body and reads the answer flags", async () => {
    let seen: unknown;
    const url = serve(async (req) => {
      seen = await req.json();
      return new URL(req.url).pathname === "/fac/verify"
        ? Response.json({ isValid: false, invalidReason: "insufficient_funds", payer: "0xabc" })
        : Response.json({
            success: false,
            errorReason: "invalid_transaction_state",
            transaction: "",
            network: "base-sepolia",
          });
    });
    const f = createHttpFacilitator({ url: `${url}/fac/`, timeoutMs: 2000 });
    expect(await f.verify(request)).toEqual({ isValid: false, invalidReason: "insufficient_funds", payer: "0xabc" });
    expect(seen).toEqual(request);
    // HTTP 200 with success:false is a failure, not a success.
    expect((await f.settle(request)).success).toBe(false);
  });

  test("an invalid payment answered with 400 and a normal body is still an answer", async () => {
    const url = serve(() => Response.json({ isValid: false, invalidReason: "invalid_scheme" }, { status: 400 }));
    expect((await createHttpFacilitator({ url, timeoutMs: 2000 }).verify(request)).isValid).toBe(false);
  });

  test("follows a redirect keeping POST and its body (x402.org -> www.)", async () => {
    const url = serve(async (req) => {
      const path = new URL(req.url).pathname;
      if (path === "/verify") return new Response(null, { status: 308, headers: { Location: "/www/verify" } });
      const body = (await req.json()) as { paymentRequirements: { b?: number } };
      return Response.json({ isValid: req.method === "POST" && body.paymentRequirements.b === 2 });
    });
    expect((await createHttpFacilitator({ url, timeoutMs: 2000 }).verify(request)).isValid).toBe(true);
  });

  test.each(["http500", "garbage", "redirectLoop"] as Fault[])("%s -> FacilitatorUnavailableError", async (fault) => {
    const s = faultyFacilitatorServer(fault);
    servers.push(s);
    const message = await unavailable(createHttpFacilitator({ url: s.url, timeoutMs: 2000 }).settle(request));
    if (fault === "redirectLoop") expect(message).toContain("loop");
    if (fault === "http500") expect(message).toContain("500");
  });

  test("down -> FacilitatorUnavailableError", async () => {
    const message = await unavailable(createHttpFacilitator({ url: await deadUrl(), timeoutMs: 2000 }).verify(request));
    expect(message).toContain("unreachable");
  });

  test("slow past the bound -> FacilitatorUnavailableError naming the bound, before the facilitator answers", async () => {
    // the fault answers after 30 s; the test's own limit (15 s) fails it if the 300 ms bound is not applied
    const s = faultyFacilitatorServer("slow", { slowMs: 30_000 });
    servers.push(s);
    const message = await unavailable(createHttpFacilitator({ url: s.url, timeoutMs: 300 }).verify(request));
    expect(message).toContain("300 ms");
    expect(s.hits.verify).toBe(1);
  }, 15_000);

  test("a success without a transaction hash is not trusted", async () => {
    const url = serve(() => Response.json({ success: true, transaction: "", network: "base-sepolia" }));
    await unavailable(createHttpFacilitator({ url, timeoutMs: 2000 }).settle(request));
  });

  test("with a CDP key, each call carries a signed bearer JWT for that call's host and path", async () => {
    const seen: { method: string; path: string; auth: string | null }[] = [];
    const url = serve((req) => {
      const path = new URL(req.url).pathname;
      seen.push({ method: req.method, path, auth: req.headers.get("authorization") });
      if (path.endsWith("/verify")) return Response.json({ isValid: false, invalidReason: "insufficient_funds" });
      if (path.endsWith("/settle"))
        return Response.json({
          success: false,
          errorReason: "invalid_transaction_state",
          transaction: "",
          network: "base-sepolia",
        });
      return Response.json({ kinds: [] });
    });
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
    const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const f = createHttpFacilitator({
      url: `${url}/platform/v2/x402`,
      timeoutMs: 5000,
      cdp: { apiKeyId: "key-id", apiKeySecret: pem },
    });
    await f.supported();
    await f.verify(request);
    await f.settle(request);
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual([
      "GET /platform/v2/x402/supported",
      "POST /platform/v2/x402/verify",
      "POST /platform/v2/x402/settle",
    ]);
    const host = new URL(url).host;
    const now = Math.floor(Date.now() / 1000);
    for (const { method, path, auth } of seen) {
      expect(auth).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
      const [h, c, sig] = auth!.slice("Bearer ".length).split(".");
      const header = JSON.parse(Buffer.from(h, "base64url").toString());
      const claims = JSON.parse(Buffer.from(c, "base64url").toString());
      expect(header).toMatchObject({ alg: "ES256", kid: "key-id" });
      // the signature is over header.claims, by the key we gave (ES256: raw r||s)
      const valid = verify(
        "sha256",
        Buffer.from(`${h}.${c}`),
        { key: publicKey, dsaEncoding: "ieee-p1363" },
        Buffer.from(sig, "base64url"),
      );
      expect({ path, valid }).toEqual({ path, valid: true });
      const tampered = Buffer.from(JSON.stringify({ ...claims, uris: [`GET ${host}/elsewhere`] })).toString(
        "base64url",
      );
      expect(
        verify(
          "sha256",
          Buffer.from(`${h}.${tampered}`),
          { key: publicKey, dsaEncoding: "ieee-p1363" },
          Buffer.from(sig, "base64url"),
        ),
      ).toBe(false);
      expect(claims.sub).toBe("key-id");
      expect(claims.uris ?? [claims.uri]).toEqual([`${method} ${host}${path}`]);
      expect(claims.exp).toBeGreaterThan(now);
    }
    // one token per call, not one reused
    expect(new Set(seen.map((s) => s.auth)).size).toBe(3);
  });

  test("a malformed CDP key fails the call without reaching the facilitator", async () => {
    let hits = 0;
    const url = serve(() => (hits++, Response.json({ kinds: [] })));
    const message = await unavailable(
      createHttpFacilitator({ url, timeoutMs: 2000, cdp: { apiKeyId: "id", apiKeySecret: "nope" } }).supported(),
    );
    expect(message).toContain("CDP");
    expect(hits).toBe(0);
  });

  test("without a CDP key no Authorization header is sent", async () => {
    let auth: string | null = "unset";
    const url = serve((req) => {
      auth = req.headers.get("authorization");
      return Response.json({ kinds: [] });
    });
    await createHttpFacilitator({ url, timeoutMs: 2000 }).supported();
    expect(auth).toBeNull();
  });
});

describe("createFacilitator(settings) with CDP credentials", () => {
  test("CDP_API_KEY_ID and CDP_API_KEY_SECRET sign every call to FACILITATOR_URL; without them nothing is sent", async () => {
    const seen: { path: string; auth: string | null }[] = [];
    const url = serve((req) => {
      const path = new URL(req.url).pathname;
      seen.push({ path, auth: req.headers.get("authorization") });
      if (path.endsWith("/verify")) return Response.json({ isValid: false, invalidReason: "insufficient_funds" });
      return Response.json({ kinds: [] });
    });
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
    const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const base = `${url}/platform/v2/x402`;
    const f = createFacilitator(
      loadSettings({ FACILITATOR_URL: base, CDP_API_KEY_ID: "organizations/o/apiKeys/k", CDP_API_KEY_SECRET: pem }),
    );
    await f.supported();
    await f.verify(request);
    expect(seen.map((s) => s.path)).toEqual(["/platform/v2/x402/supported", "/platform/v2/x402/verify"]);
    for (const { auth } of seen) {
      const [h, c, sig] = auth!.replace(/^Bearer /, "").split(".");
      expect(JSON.parse(Buffer.from(h, "base64url").toString())).toMatchObject({
        alg: "ES256",
        kid: "organizations/o/apiKeys/k",
      });
      expect(
        verify(
          "sha256",
          Buffer.from(`${h}.${c}`),
          { key: publicKey, dsaEncoding: "ieee-p1363" },
          Buffer.from(sig, "base64url"),
        ),
      ).toBe(true);
    }

    seen.length = 0;
    await createFacilitator(loadSettings({ FACILITATOR_URL: base })).supported();
    expect(seen).toEqual([{ path: "/platform/v2/x402/supported", auth: null }]);
  });
});
