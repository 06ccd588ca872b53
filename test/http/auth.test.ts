import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { parseTtl } from "../../src/duration";
import { createToken } from "../../src/http/auth";
import { checkToken, tokenPlugin } from "../../src/http/token";
import { CID_V1, makeHarness, PREFIX, requirement, SECRET } from "../instructions/harness";

const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");
const now = () => Math.floor(Date.now() / 1000);

/**
 * A token with any header and claims, signed with HMAC over `secret` unless `sig` is given:
 * SHA-512 when the header says HS512 (a genuine HS512 token), SHA-256 otherwise.
 */
function forge(header: Record<string, unknown>, claims: Record<string, unknown>, secret = SECRET, sig?: string) {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${
    sig ??
    createHmac(header.alg === "HS512" ? "sha512" : "sha256", secret)
      .update(input)
      .digest("base64url")
  }`;
}

/** Checks with the same @elysiajs/jwt decorator the auth macro uses. */
const verify = (token: string, secret = SECRET, now?: number) =>
  checkToken(tokenPlugin(secret).decorator.jwt, token, now);

const good = () => ({ scope: "read write", exp: now() + 600, iat: now() });

describe("rejected tokens get 401 in the error shape", () => {
  const rejected: [string, () => string | null | Promise<string>][] = [
    ["no Authorization header", () => null],
    ["another scheme", () => `Basic ${btoa("admin:admin")}`],
    ["Bearer with nothing", () => "Bearer "],
    ["garbage", () => "Bearer not.a.jwt"],
    ["two parts", () => `Bearer ${b64({ alg: "HS256" })}.${b64(good())}`],
    ["alg none, empty signature", () => `Bearer ${b64({ alg: "none", typ: "JWT" })}.${b64(good())}.`],
    ["alg none, HMAC signature", () => `Bearer ${forge({ alg: "none" }, good())}`],
    ["alg HS512", () => `Bearer ${forge({ alg: "HS512", typ: "JWT" }, good())}`],
    ["alg RS256", () => `Bearer ${forge({ alg: "RS256", typ: "JWT" }, good())}`],
    ["alg hs256 (case)", () => `Bearer ${forge({ alg: "hs256" }, good())}`],
    [
      "wrong secret",
      async () =>
        `Bearer ${await createToken("another-secret-of-at-least-32-characters!", { scopes: ["read", "write"], ttlSeconds: 600 })}`,
    ],
    [
      "tampered claims",
      async () => {
        const [h, , s] = (await createToken(SECRET, { scopes: ["read"], ttlSeconds: 600 })).split(".");
        return `Bearer ${h}.${b64(good())}.${s}`;
      },
    ],
    [
      "truncated signature",
      async () => `Bearer ${(await createToken(SECRET, { scopes: ["read", "write"], ttlSeconds: 600 })).slice(0, -4)}`,
    ],
    [
      "expired",
      async () =>
        `Bearer ${await createToken(SECRET, { scopes: ["read", "write"], ttlSeconds: 60, now: now() - 120 })}`,
    ],
    ["no exp", () => `Bearer ${forge({ alg: "HS256", typ: "JWT" }, { scope: "read write" })}`],
    [
      "not yet valid (nbf)",
      async () =>
        `Bearer ${await createToken(SECRET, { scopes: ["read", "write"], ttlSeconds: 600, notBefore: now() + 300 })}`,
    ],
    ["crit header", () => `Bearer ${forge({ alg: "HS256", crit: ["exp"] }, good())}`],
  ];
  for (const [what, header] of rejected) {
    test(what, async () => {
      const h = await makeHarness();
      const pi = await h.create();
      const before = h.snapshot();
      const value = await header();
      const headers: Record<string, string> = value === null ? {} : { authorization: value };
      for (const [method, path, body] of [
        ["GET", PREFIX],
        ["GET", `${PREFIX}/${pi.id}`],
        ["POST", PREFIX, { name: "x", payment_requirements: [requirement()] }],
        ["PUT", `${PREFIX}/${pi.id}/cids/${CID_V1}`],
        ["DELETE", `${PREFIX}/${pi.id}`],
      ] as const) {
        const res = await h.call(method, path, { token: null, headers, body });
        expect(res.status).toBe(401);
        expect(res.json.error.code).toBe("unauthorized");
        expect(res.headers.get("www-authenticate")).toStartWith("Bearer");
      }
      expect(h.snapshot()).toBe(before);
    });
  }
});

describe("scopes", () => {
  test("a read token reads but gets 403 on every write", async () => {
    const h = await makeHarness();
    const pi = await h.create();
    const before = h.snapshot();
    expect((await h.call("GET", PREFIX, { token: h.tokens.read })).status).toBe(200);
    expect((await h.call("GET", `${PREFIX}/${pi.id}/cids`, { token: h.tokens.read })).status).toBe(200);
    for (const [method, path, body] of [
      ["POST", PREFIX, { name: "x", payment_requirements: [requirement()] }],
      ["PATCH", `${PREFIX}/${pi.id}`, { name: "y" }],
      ["DELETE", `${PREFIX}/${pi.id}`],
      ["PUT", `${PREFIX}/${pi.id}/cids/${CID_V1}`],
      ["DELETE", `${PREFIX}/${pi.id}/cids/${CID_V1}`],
    ] as const) {
      const res = await h.call(method, path, { token: h.tokens.read, body });
      expect(res.status).toBe(403);
      expect(res.json.error.code).toBe("forbidden");
    }
    expect(h.snapshot()).toBe(before);
  });

  test("a write-only token cannot read", async () => {
    const h = await makeHarness();
    expect((await h.call("GET", PREFIX, { token: h.tokens.write })).status).toBe(403);
    expect(
      (
        await h.call("POST", PREFIX, {
          token: h.tokens.write,
          body: { name: "x", payment_requirements: [requirement()] },
        })
      ).status,
    ).toBe(200);
  });

  test("auth comes before validation: an anonymous bad body is a 401, not a 400", async () => {
    const h = await makeHarness();
    const res = await h.call("POST", PREFIX, { token: null, body: { name: "" } });
    expect(res.status).toBe(401);
  });

  test("the gateway and the API docs need no token", async () => {
    const h = await makeHarness();
    expect((await h.call("GET", `/x402/cid/${CID_V1}`, { token: null })).status).not.toBe(401);
    expect((await h.call("GET", "/openapi/json", { token: null })).status).toBe(200);
  });
});

describe("checkToken", () => {
  test("accepts its own tokens with their scopes; lowercase Bearer works over HTTP too", async () => {
    const t = await createToken(SECRET, { scopes: ["read"], ttlSeconds: 60 });
    expect((await verify(t))?.scopes).toEqual(["read"]);
    const h = await makeHarness();
    expect(
      (await h.call("GET", PREFIX, { token: null, headers: { authorization: `bearer ${h.tokens.read}` } })).status,
    ).toBe(200);
  });

  test("exp and nbf bound validity to the second; other rejections", async () => {
    const expired = await createToken(SECRET, { scopes: ["read"], ttlSeconds: 10, now: 1000 });
    expect(await verify(expired, SECRET, 1010)).toBeUndefined();
    expect(await verify(expired, SECRET, 1009)).toBeDefined();
    const later = await createToken(SECRET, { scopes: ["read"], ttlSeconds: 100, now: 1000, notBefore: 1050 });
    expect(await verify(later, SECRET, 1049)).toBeUndefined();
    expect(await verify(later, SECRET, 1050)).toBeDefined();
    expect(await verify(forge({ alg: "HS256", typ: "JWT" }, good()))).toBeDefined();
    expect(await verify(forge({ alg: "none" }, good()))).toBeUndefined();
    expect(await verify(forge({ alg: "HS512", typ: "JWT" }, good()))).toBeUndefined();
    expect(await verify(forge({ alg: "HS256", typ: "JWT" }, good(), "x".repeat(40)))).toBeUndefined();
    expect(await verify(forge({ alg: "HS256", typ: "JWT" }, { exp: now() + 600 }))).toBeUndefined();
    expect(await verify(forge({ alg: "HS256", typ: "JWT" }, { ...good(), scope: ["read"] }))).toBeUndefined();
    expect(await verify("a.b")).toBeUndefined();
  });

  test("parseTtl", () => {
    expect(parseTtl("30d")).toBe(30 * 86400);
    expect(parseTtl("12h")).toBe(43200);
    expect(parseTtl("15m")).toBe(900);
    expect(parseTtl("90s")).toBe(90);
    expect(parseTtl("2w")).toBe(14 * 86400);
    expect(parseTtl("90")).toBeUndefined(); // a bare number: which unit?
    expect(parseTtl("0")).toBeUndefined();
    expect(parseTtl("1y")).toBeUndefined();
    expect(parseTtl("99999d")).toBeUndefined();
  });
});
