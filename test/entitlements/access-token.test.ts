/**
 * Access tokens (src/entitlements/access-token.ts): signed and checked with
 * node:crypto, and still standard HS256 JWTs. jose (what `@elysiajs/jwt` and
 * every JWT library use) verifies ours, ours verifies jose's (tokens issued
 * before the change keep working), and anything tampered, expired, for
 * another file, another key or another algorithm is refused by both.
 */
import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { jwt } from "@elysiajs/jwt";
import { decodeJwt, decodeProtectedHeader, jwtVerify } from "jose";
import { accessTokenKey, createAccessTokens } from "../../src/entitlements/access-token";

const SECRET = "access-token-test-secret-0123456789abcdef";
const PAYER = "0x1234567890AbcdEF1234567890aBcDeF12345678" as const;
const CID = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";
const NOW = 1_800_000_000;
const tokens = createAccessTokens({ managementSecret: SECRET, now: () => NOW });
const joseKey = new TextEncoder().encode(accessTokenKey(SECRET));
/** The signer these tokens were made with before: @elysiajs/jwt (jose) over the same derived key. */
const joseSigner = jwt({ name: "jwt", secret: accessTokenKey(SECRET), alg: "HS256", typ: "JWT" }).decorator.jwt;

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
const hmac = (key: Uint8Array | string, input: string) => createHmac("sha256", key).update(input).digest("base64url");
/** A token over any header and claims, signed with `key` (the real key unless said). */
function forge(header: unknown, claims: unknown, key: Uint8Array | string = joseKey) {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${hmac(key, input)}`;
}

describe("access tokens", () => {
  test("a token answers its payer, CID and expiry, and only for that CID", () => {
    const token = tokens.sign({ payer: PAYER, cid: CID, exp: NOW + 3600 });
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(tokens.verify(token, CID)).toEqual({ payer: PAYER, cid: CID, exp: NOW + 3600 });
    expect(tokens.verify(token, `${CID}x`)).toBeUndefined();
  });

  test("jose verifies ours as a standard HS256 JWT with the same claims jose would write", async () => {
    const token = tokens.sign({ payer: PAYER, cid: CID, exp: NOW + 3600 }, NOW - 5);
    const { payload, protectedHeader } = await jwtVerify(token, joseKey, {
      algorithms: ["HS256"],
      typ: "JWT",
      requiredClaims: ["exp"],
      currentDate: new Date(NOW * 1000),
    });
    expect(protectedHeader).toEqual({ alg: "HS256", typ: "JWT" });
    expect(payload).toEqual({ sub: PAYER, cid: CID, exp: NOW + 3600, iat: NOW - 5 });
  });

  test("byte for byte what @elysiajs/jwt (jose) signs for the same claims", async () => {
    const exp = Math.floor(Date.now() / 1000) + 3600;
    const theirs = await joseSigner.sign({ sub: PAYER, cid: CID, exp });
    const iat = decodeJwt(theirs).iat as number;
    expect(decodeProtectedHeader(theirs)).toEqual({ alg: "HS256", typ: "JWT" });
    expect(tokens.sign({ payer: PAYER, cid: CID, exp }, iat)).toBe(theirs);
  });

  test("a token jose signed (before this signer) verifies here", async () => {
    const exp = Math.floor(Date.now() / 1000) + 3600;
    const theirs = await joseSigner.sign({ sub: PAYER, cid: CID, exp });
    const live = createAccessTokens({ managementSecret: SECRET });
    expect(live.verify(theirs, CID)).toEqual({ payer: PAYER, cid: CID, exp });
  });

  test("expired at exp (jose's rule), refused by both", async () => {
    const token = tokens.sign({ payer: PAYER, cid: CID, exp: NOW + 10 });
    expect(tokens.verify(token, CID, NOW + 9)).toBeDefined();
    expect(tokens.verify(token, CID, NOW + 10)).toBeUndefined();
    expect(tokens.verify(token, CID, NOW + 11)).toBeUndefined();
    await expect(jwtVerify(token, joseKey, { currentDate: new Date((NOW + 10) * 1000) })).rejects.toThrow();
  });

  test("tampered claims, signature or header are refused by both", async () => {
    const token = tokens.sign({ payer: PAYER, cid: CID, exp: NOW + 3600 });
    const [header, payload, signature] = token.split(".");
    const otherPayer = b64({ sub: "0x000000000000000000000000000000000000dEaD", cid: CID, exp: NOW + 3600, iat: NOW });
    const flipped = signature.slice(0, -2) + (signature.at(-2) === "A" ? "B" : "A") + signature.at(-1);
    const tampered = [
      `${header}.${otherPayer}.${signature}`,
      `${header}.${b64({ sub: PAYER, cid: CID, exp: NOW + 10 ** 9, iat: NOW })}.${signature}`,
      `${header}.${payload}.${flipped}`,
      `${header}.${payload}.`,
      `${header}.${payload}`,
      `${header}.${payload}.${signature}.${signature}`,
      `${b64({ alg: "HS256", typ: "JWT", kid: "x" })}.${payload}.${signature}`,
    ];
    for (const t of tampered) {
      expect({ t, ours: tokens.verify(t, CID) }).toEqual({ t, ours: undefined });
      const jose = await jwtVerify(t, joseKey, { currentDate: new Date(NOW * 1000) }).then(
        () => "accepted",
        () => "refused",
      );
      expect({ t, jose }).toEqual({ t, jose: "refused" });
    }
    // The same signature padded: jose tolerates the non-canonical spelling; only the canonical one passes here.
    expect(tokens.verify(`${header}.${payload}.${signature}=`, CID)).toBeUndefined();
  });

  test("another key, alg none, another algorithm or header, and junk are refused", () => {
    const claims = { sub: PAYER, cid: CID, exp: NOW + 3600, iat: NOW };
    const cases = [
      // the management secret itself (a management token is not an access token)
      forge({ alg: "HS256", typ: "JWT" }, claims, SECRET),
      forge({ alg: "HS256", typ: "JWT" }, claims, "another-secret"),
      `${b64({ alg: "none", typ: "JWT" })}.${b64(claims)}.`,
      forge({ alg: "HS512", typ: "JWT" }, claims),
      forge({ typ: "JWT", alg: "HS256" }, claims), // the same header spelled otherwise: not ours
      forge({ alg: "HS256" }, claims),
      "",
      "a.b.c",
      "not a token",
      `${"a".repeat(3000)}.b.c`,
    ];
    for (const t of cases) expect({ t, ours: tokens.verify(t, CID) }).toEqual({ t, ours: undefined });
  });

  test("claims of the wrong type are refused even when signed with the key", () => {
    const header = { alg: "HS256", typ: "JWT" };
    const bad = [
      { sub: PAYER, cid: CID }, // no exp
      { sub: PAYER, cid: CID, exp: String(NOW + 3600) },
      { sub: PAYER, cid: CID, exp: Number.POSITIVE_INFINITY },
      { sub: "not-an-address", cid: CID, exp: NOW + 3600 },
      { sub: PAYER, cid: [CID], exp: NOW + 3600 },
      [PAYER, CID, NOW + 3600],
      null,
    ];
    for (const claims of bad) {
      const t = forge(header, claims);
      expect({ claims, ours: tokens.verify(t, CID) }).toEqual({ claims, ours: undefined });
    }
    // the same header and key with sound claims does verify: the refusals above are the claims'
    expect(tokens.verify(forge(header, { sub: PAYER, cid: CID, exp: NOW + 3600 }), CID)?.payer).toBe(PAYER);
  });
});
