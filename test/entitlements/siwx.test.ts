/**
 * Sign-in-with-x on the server (src/entitlements/siwx.ts): real signatures
 * from viem accounts over the EIP-4361 text, every refusal with its reason,
 * single use across two connections to one file, and a sign-in made by the
 * real client of `@x402/extensions` (`wrapFetchWithSIWx`) against our 402.
 */
import { afterAll, beforeEach, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeSIWxHeader, formatSIWEMessage, wrapFetchWithSIWx } from "@x402/extensions/sign-in-with-x";
import { getAddress, type Hex } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { type Db, openDb } from "../../src/db/client";
import { createSiwx, type SiwxOptions, type SiwxVerdict, siweMessage } from "../../src/entitlements/siwx";
import { createSiwxNonceStore } from "../../src/entitlements/siwx-nonces";
import type { SiwxChallenge, SiwxInfo } from "../../src/x402/extensions";
import { encodeHeader, Header } from "../../src/x402/headers";

const PUBLIC_URL = "https://gw.example.com";
const RESOURCE = `${PUBLIC_URL}/x402/cid/bafkreiaaaa`;
const OTHER_RESOURCE = `${PUBLIC_URL}/x402/cid/bafkreibbbb`;
const SECRET = "siwx-test-secret-0123456789abcdef";
// A bucket boundary plus 10 s: challenges made "now" are 10 s old.
const T0 = 1_800_000_000 - (1_800_000_000 % 60) + 10;

const buyer = privateKeyToAccount(generatePrivateKey());
const stranger = privateKeyToAccount(generatePrivateKey());

let db: Db;
const dirs: string[] = [];

beforeEach(() => {
  db?.sqlite.close();
  db = openDb(":memory:");
});

afterAll(() => {
  db?.sqlite.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function server(extra: Partial<SiwxOptions> = {}) {
  return createSiwx({ publicUrl: PUBLIC_URL, secret: SECRET, nonces: createSiwxNonceStore(db), ...extra });
}

/** What a client sends: the challenge's fields (some overridden), chain, address, and a signature over the EIP-4361 text. */
async function signIn(
  info: SiwxInfo,
  opts: {
    account?: PrivateKeyAccount;
    chainId?: string;
    address?: `0x${string}`;
    signature?: Hex;
    override?: Partial<SiwxInfo>;
  } = {},
) {
  const account = opts.account ?? buyer;
  const chainId = opts.chainId ?? "eip155:84532";
  const fields = { ...info, ...opts.override, chainId, type: "eip191" as const };
  const address = opts.address ?? account.address;
  const message = formatSIWEMessage(fields, address);
  const signature = opts.signature ?? (await account.signMessage({ message }));
  return encodeSIWxHeader({ ...fields, address, signature });
}

/** A header whose fields no EIP-4361 message can hold (so nobody could have signed it). */
const unsignable = (info: SiwxInfo, override: Partial<SiwxInfo>) =>
  encodeSIWxHeader({
    ...info,
    ...override,
    chainId: "eip155:84532",
    type: "eip191",
    address: buyer.address,
    signature: `0x${"11".repeat(65)}`,
  });

const iso = (s: number) => new Date(s * 1000).toISOString();

function refused(v: SiwxVerdict, reason: string) {
  expect(v).toMatchObject({ ok: false, reason });
  if (!v.ok) {
    // A sentence for people: no stack, no library text.
    expect(v.message).not.toMatch(/\bat \w|Error|zod|undefined/);
    expect(v.message.length).toBeLessThan(120);
  }
}

test("the challenge: the spec's shape, domain and uri from PUBLIC_URL, Base and Base Sepolia, a 32-hex server nonce", () => {
  const c: SiwxChallenge = server().challenge(RESOURCE, T0);
  expect(c.info).toEqual({
    domain: "gw.example.com",
    uri: RESOURCE,
    version: "1",
    nonce: expect.stringMatching(/^[0-9a-f]{32}$/),
    issuedAt: iso(T0 - 10),
    expirationTime: iso(T0 - 10 + 300),
    statement: expect.any(String),
    resources: [RESOURCE],
  });
  expect(c.supportedChains).toEqual([
    { chainId: "eip155:8453", type: "eip191" },
    { chainId: "eip155:84532", type: "eip191" },
  ]);
  expect(c.schema).toMatchObject({
    type: "object",
    required: expect.arrayContaining(["address", "signature", "nonce"]),
  });
});

test("the challenge is one object per resource and minute: the cached 402 is rebuilt once per bucket", () => {
  const s = server();
  const a = s.challenge(RESOURCE, T0);
  expect(s.challenge(RESOURCE, T0 + 49)).toBe(a);
  // Frozen, all the way down: what is cached by its identity cannot change under the cache.
  expect([a, a.info, a.info.resources, a.supportedChains, a.supportedChains[0], a.schema].every(Object.isFrozen)).toBe(
    true,
  );
  const next = s.challenge(RESOURCE, T0 + 50);
  expect(next).not.toBe(a);
  expect(next.info.nonce).not.toBe(a.info.nonce);
  expect(s.challenge(OTHER_RESOURCE, T0).info.nonce).not.toBe(a.info.nonce);
  // Stateless: another process with the same secret issues the same nonce.
  expect(server().challenge(RESOURCE, T0 + 5).info.nonce).toBe(a.info.nonce);
});

test("a valid sign-in verifies once, and the address comes back checksummed", async () => {
  const s = server();
  const header = await signIn(s.challenge(RESOURCE, T0).info);
  expect(await s.verify(header, RESOURCE, T0 + 5)).toMatchObject({ ok: true, address: getAddress(buyer.address) });
  refused(await s.verify(header, RESOURCE, T0 + 6), "siwx_nonce_reused");
});

test("buyers share a minute's challenge: one buyer's sign-in does not use up another's", async () => {
  const s = server();
  const info = s.challenge(RESOURCE, T0).info;
  expect((await s.verify(await signIn(info), RESOURCE, T0)).ok).toBe(true);
  expect((await s.verify(await signIn(info, { account: stranger }), RESOURCE, T0)).ok).toBe(true);
});

test("single use holds across processes sharing the database file", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-siwx-"));
  dirs.push(dir);
  const one = openDb(join(dir, "db.sqlite"));
  const two = openDb(join(dir, "db.sqlite"));
  try {
    const a = createSiwx({ publicUrl: PUBLIC_URL, secret: SECRET, nonces: createSiwxNonceStore(one) });
    const b = createSiwx({ publicUrl: PUBLIC_URL, secret: SECRET, nonces: createSiwxNonceStore(two) });
    const header = await signIn(a.challenge(RESOURCE, T0).info);
    const [x, y] = await Promise.all([a.verify(header, RESOURCE, T0), b.verify(header, RESOURCE, T0)]);
    expect([x.ok, y.ok].sort()).toEqual([false, true]);
    refused(x.ok ? y : x, "siwx_nonce_reused");
  } finally {
    one.sqlite.close();
    two.sqlite.close();
  }
});

test("a header signed over viem's own EIP-4361 text verifies (the message is standard SIWE)", async () => {
  const s = server();
  const info = s.challenge(RESOURCE, T0).info;
  const message = createSiweMessage({
    domain: info.domain,
    address: buyer.address,
    statement: info.statement,
    uri: info.uri,
    version: "1",
    chainId: 8453,
    nonce: info.nonce,
    issuedAt: new Date(info.issuedAt),
    expirationTime: new Date(info.expirationTime as string),
    resources: info.resources,
  });
  const signature = await buyer.signMessage({ message });
  const header = encodeSIWxHeader({
    ...info,
    chainId: "eip155:8453",
    type: "eip191",
    address: buyer.address,
    signature,
  });
  expect(await s.verify(header, RESOURCE, T0)).toMatchObject({ ok: true });
});

test("the fast EIP-4361 text (viem) is the package's text, field for field; other time spellings use the package's", () => {
  const info = server().challenge(RESOURCE, T0).info;
  const base = { ...info, chainId: "eip155:8453", type: "eip191", address: buyer.address, signature: "0x00" };
  const variants = [
    base,
    { ...base, statement: undefined },
    { ...base, expirationTime: undefined, resources: undefined },
    { ...base, notBefore: iso(T0 - 30), requestId: "req-1" },
    { ...base, resources: [RESOURCE, `${PUBLIC_URL}/x402/cid/b`, "ipfs://bafkreiaaaa"] },
    { ...base, chainId: "eip155:84532", uri: `${RESOURCE}?download=1` },
    // Not what Date prints: the package's builder decides (it prints them as Dates do).
    { ...base, issuedAt: "2027-01-15T08:00:00Z", expirationTime: "2027-01-15T10:05:00+02:00" },
  ];
  for (const v of variants) {
    const { address, signature: _, ...rest } = v;
    expect(siweMessage(v)).toBe(formatSIWEMessage({ ...rest, type: "eip191" }, address));
  }
  expect(siweMessage({ ...base, statement: "two\nlines" })).toBeUndefined();
});

test("the text names the signer's address checksummed, whatever its case, as both builders write it (90 addresses)", () => {
  const info = server().challenge(RESOURCE, T0).info;
  for (let i = 0; i < 90; i++) {
    const checksummed = getAddress(`0x${randomBytes(20).toString("hex")}`);
    const spelling = [checksummed, checksummed.toLowerCase(), `0x${checksummed.slice(2).toUpperCase()}`][i % 3];
    const fields = { ...info, chainId: "eip155:8453", type: "eip191" as const };
    const text = siweMessage({ ...fields, address: spelling, signature: "0x00" });
    expect(text).toBe(formatSIWEMessage(fields, checksummed));
    expect(text?.split("\n")[1]).toBe(checksummed);
  }
  // the placeholder's own address, and a domain that is an IP with a port
  const zero = "0x0000000000000000000000000000000000000000";
  const local = { ...info, domain: "127.0.0.1:8080", chainId: "eip155:8453", type: "eip191" as const };
  expect(siweMessage({ ...local, address: zero, signature: "0x00" })).toBe(formatSIWEMessage(local, zero));
});

test("one field changed at a time, the same signer: each text is that field's own (no text reused for another)", () => {
  const info = server().challenge(RESOURCE, T0).info;
  const base = { ...info, chainId: "eip155:8453", type: "eip191" as const, requestId: "r1", notBefore: iso(T0 - 60) };
  const changes: Partial<typeof base>[] = [
    {},
    { domain: "gw2.example.com" },
    { statement: "Another statement." },
    { uri: `${RESOURCE}x` },
    { chainId: "eip155:84532" },
    { nonce: `${info.nonce.slice(0, -1)}0` },
    { issuedAt: iso(T0 - 1) },
    { expirationTime: iso(T0 + 299) },
    { notBefore: iso(T0 - 61) },
    { requestId: "r2" },
    { resources: [RESOURCE, `${RESOURCE}/more`] },
  ];
  for (const round of [1, 2]) {
    for (const change of changes) {
      const fields = { ...base, ...change };
      expect({ round, change, text: siweMessage({ ...fields, address: buyer.address, signature: "0x00" }) }).toEqual({
        round,
        change,
        text: formatSIWEMessage(fields, buyer.address),
      });
    }
  }
});

test("a message for another site, or naming another domain, is refused", async () => {
  const s = server();
  // Another site's own challenge, signed honestly for that site, replayed here.
  const other = createSiwx({ publicUrl: "https://other.example", secret: SECRET, nonces: createSiwxNonceStore(db) });
  const theirs = await signIn(other.challenge("https://other.example/x402/cid/bafkreiaaaa", T0).info);
  refused(await s.verify(theirs, RESOURCE, T0), "siwx_domain_mismatch");
  // Our challenge, with the domain changed to one an attacker's Host header could name.
  const info = s.challenge(RESOURCE, T0).info;
  refused(
    await s.verify(await signIn(info, { override: { domain: "evil.example" } }), RESOURCE, T0),
    "siwx_domain_mismatch",
  );
  refused(
    await s.verify(await signIn(info, { override: { domain: "gw.example.com:8443" } }), RESOURCE, T0),
    "siwx_domain_mismatch",
  );
});

test("a sign-in for another resource, or with another uri, is refused", async () => {
  const s = server();
  const header = await signIn(s.challenge(OTHER_RESOURCE, T0).info);
  refused(await s.verify(header, RESOURCE, T0), "siwx_uri_mismatch");
  const info = s.challenge(RESOURCE, T0).info;
  refused(
    await s.verify(await signIn(info, { override: { uri: `${PUBLIC_URL}/x402/cid/other` } }), RESOURCE, T0),
    "siwx_uri_mismatch",
  );
  // Another resource's nonce with this resource's uri: the nonce is bound to its resource.
  const swapped = await signIn(info, { override: { nonce: s.challenge(OTHER_RESOURCE, T0).info.nonce } });
  refused(await s.verify(swapped, RESOURCE, T0), "siwx_invalid_nonce");
});

test("issuedAt: more than 5 minutes old, or in the future, is refused", async () => {
  const s = server();
  const info = s.challenge(RESOURCE, T0).info;
  refused(await s.verify(await signIn(info), RESOURCE, T0 - 10 + 301), "siwx_issued_at_too_old");
  refused(
    await s.verify(await signIn(info, { override: { issuedAt: iso(T0 + 120) } }), RESOURCE, T0),
    "siwx_issued_at_in_future",
  );
  // A small skew is tolerated (another process's clock).
  expect((await s.verify(await signIn(info, { override: { issuedAt: iso(T0 + 20) } }), RESOURCE, T0)).ok).toBe(true);
  refused(await s.verify(unsignable(info, { issuedAt: "yesterday" }), RESOURCE, T0), "siwx_invalid_header");
});

test("expirationTime passed and notBefore ahead are refused", async () => {
  const s = server();
  const info = s.challenge(RESOURCE, T0).info;
  refused(
    await s.verify(await signIn(info, { override: { expirationTime: iso(T0 - 1) } }), RESOURCE, T0),
    "siwx_expired",
  );
  refused(
    await s.verify(await signIn(info, { override: { notBefore: iso(T0 + 600) } }), RESOURCE, T0),
    "siwx_not_yet_valid",
  );
});

test("a nonce that is not ours, or ours but too old, is refused", async () => {
  const s = server();
  const info = s.challenge(RESOURCE, T0).info;
  refused(
    await s.verify(await signIn(info, { override: { nonce: "a1b2c3d4e5f67890a1b2c3d4e5f67890" } }), RESOURCE, T0),
    "siwx_invalid_nonce",
  );
  refused(
    await s.verify(await signIn(info, { override: { nonce: "notHexButAlnum12" } }), RESOURCE, T0),
    "siwx_invalid_nonce",
  );
  // Another server's secret: the same layout, not our MAC.
  const foreign = createSiwx({ publicUrl: PUBLIC_URL, secret: "another-secret", nonces: createSiwxNonceStore(db) });
  refused(await s.verify(await signIn(foreign.challenge(RESOURCE, T0).info), RESOURCE, T0), "siwx_invalid_nonce");
  // Our nonce from 7 minutes ago, re-signed with a fresh issuedAt: the nonce's own age decides.
  const old = s.challenge(RESOURCE, T0 - 420).info;
  const header = await signIn(old, { override: { issuedAt: iso(T0 - 5), expirationTime: iso(T0 + 60) } });
  refused(await s.verify(header, RESOURCE, T0), "siwx_nonce_expired");
});

test("signatures: another key's, a corrupt one, an unsupported chain", async () => {
  const s = server();
  const info = s.challenge(RESOURCE, T0).info;
  refused(
    await s.verify(await signIn(info, { account: stranger, address: buyer.address }), RESOURCE, T0),
    "siwx_invalid_signature",
  );
  const good = await signIn(info);
  const forged = `0x${"11".repeat(64)}1b` as Hex;
  refused(await s.verify(await signIn(info, { signature: forged }), RESOURCE, T0), "siwx_invalid_signature");
  refused(await s.verify(await signIn(info, { chainId: "eip155:1" }), RESOURCE, T0), "siwx_unsupported_chain");
  // None of those refusals used up the buyer's nonce.
  expect((await s.verify(good, RESOURCE, T0)).ok).toBe(true);
});

test("smart-wallet signatures: refused without an RPC, decided by verifyContract with one", async () => {
  const info = server().challenge(RESOURCE, T0).info;
  const wallet = "0x2222222222222222222222222222222222222222" as const;
  const longSig = `0x${"ab".repeat(200)}` as Hex;
  const header = await signIn(info, { address: wallet, signature: longSig });
  refused(await server().verify(header, RESOURCE, T0), "siwx_smart_wallet_unsupported");

  const calls: unknown[] = [];
  const accepting = server({
    verifyContract: async (args) => {
      calls.push(args);
      return true;
    },
  });
  expect(await accepting.verify(header, RESOURCE, T0)).toMatchObject({ ok: true, address: wallet });
  expect(calls).toEqual([
    { address: wallet, message: expect.stringContaining("Nonce: "), signature: longSig, chainId: 84532 },
  ]);

  const header2 = await signIn(server().challenge(RESOURCE, T0 + 60).info, { address: wallet, signature: longSig });
  refused(
    await server({ verifyContract: async () => false }).verify(header2, RESOURCE, T0 + 60),
    "siwx_invalid_signature",
  );
  const broken = server({
    verifyContract: async () => {
      throw new Error("HTTP request failed. URL: https://rpc.example/KEY123");
    },
  });
  const v = await broken.verify(header2, RESOURCE, T0 + 60);
  refused(v, "siwx_unavailable");
  expect(JSON.stringify(v)).not.toContain("KEY123");
});

test("malformed headers are refused with siwx_invalid_header, never an exception", async () => {
  const s = server();
  const info = s.challenge(RESOURCE, T0).info;
  const bad = [
    "",
    "not base64 at all!",
    Buffer.from("{not json").toString("base64"),
    encodeHeader({ domain: "gw.example.com" }),
    encodeHeader({ ...info, chainId: "eip155:84532", type: "eip191", address: "0x1234", signature: "0x00" }),
    encodeHeader([1, 2, 3]),
    "A".repeat(100_000),
  ];
  for (const header of bad) refused(await s.verify(header, RESOURCE, T0), "siwx_invalid_header");
  refused(await s.verify(unsignable(info, { version: "2" }), RESOURCE, T0), "siwx_invalid_header");
});

test("used nonces are pruned once they can no longer verify", async () => {
  const nonces = createSiwxNonceStore(db);
  expect(nonces.use("n1", T0)).toBe(true);
  expect(nonces.use("n1", T0 + 1)).toBe(false);
  expect(nonces.use("n2", T0 + 100)).toBe(true);
  expect(nonces.prune(T0 + 50)).toBe(1);
  expect(nonces.use("n1", T0 + 200)).toBe(true);
});

test("the real client: wrapFetchWithSIWx signs in against our challenge and is let in", async () => {
  let siwx: ReturnType<typeof createSiwx> | undefined;
  const seen: SiwxVerdict[] = [];
  const http = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req): Promise<Response> {
      const url = new URL(req.url);
      const resourceUrl: string = `${base}${url.pathname}`;
      const header = req.headers.get("SIGN-IN-WITH-X");
      if (header && siwx) {
        const v = await siwx.verify(header, resourceUrl);
        seen.push(v);
        return v.ok ? new Response(`hello ${v.address}`) : Response.json({ reason: v.reason }, { status: 403 });
      }
      const required = {
        x402Version: 2,
        error: "Provide a valid PAYMENT-SIGNATURE header to access this content",
        resource: { url: resourceUrl, description: "a file", mimeType: "text/plain" },
        accepts: [
          {
            scheme: "exact",
            network: "eip155:84532",
            amount: "10000",
            asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
            payTo: "0x1111111111111111111111111111111111111111",
            maxTimeoutSeconds: 60,
            extra: { name: "USDC", version: "2" },
          },
        ],
        extensions: { "sign-in-with-x": siwx?.challenge(resourceUrl) },
      };
      return Response.json({}, { status: 402, headers: { [Header.paymentRequired]: encodeHeader(required) } });
    },
  });
  const base: string = `http://127.0.0.1:${http.port}`;
  try {
    siwx = createSiwx({ publicUrl: base, secret: SECRET, nonces: createSiwxNonceStore(db) });
    const res = await wrapFetchWithSIWx(fetch, buyer)(`${base}/x402/cid/bafkreiaaaa`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(`hello ${buyer.address}`);
    expect(seen).toMatchObject([{ ok: true, address: buyer.address }]);
  } finally {
    http.stop(true);
  }
});

test("verified without spending: the sign-in is spent once, by `use`, and only then is it a replay", async () => {
  const s = server();
  const header = await signIn(s.challenge(RESOURCE, T0).info);
  const first = await s.verify(header, RESOURCE, T0 + 5, { consume: false });
  if (!first.ok) throw new Error(`refused: ${first.reason}`);
  // not spent yet: verifying again (a HEAD, a wallet that owned nothing) is still fine
  expect(await s.verify(header, RESOURCE, T0 + 6, { consume: false })).toMatchObject({ ok: true });
  expect(await s.use(first.key, T0 + 7)).toBeUndefined();
  refused((await s.use(first.key, T0 + 8))!, "siwx_nonce_reused");
  refused(await s.verify(header, RESOURCE, T0 + 9), "siwx_nonce_reused");
});
