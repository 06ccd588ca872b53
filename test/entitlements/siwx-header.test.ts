/**
 * The SIGN-IN-WITH-X header decoder (src/entitlements/siwx-header.ts)
 * against the package's own `parseSIWxHeader`: for real client headers,
 * every field dropped, retyped or added, and malformed base64 and JSON, both
 * must accept the same headers and return the same payload.
 */
import { expect, test } from "bun:test";
import { encodeSIWxHeader, parseSIWxHeader } from "@x402/extensions/sign-in-with-x";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { decodeSiwxHeader } from "../../src/entitlements/siwx-header";

const account = privateKeyToAccount(generatePrivateKey());
const FULL = {
  domain: "gw.example.com",
  address: account.address,
  statement: "Sign in with the wallet that paid, to download again without paying again.",
  uri: "https://gw.example.com/x402/cid/bafkreiaaaa",
  version: "1",
  chainId: "eip155:8453",
  type: "eip191",
  nonce: "0000abcd0123456789abcdef01234567",
  issuedAt: "2027-01-15T08:00:00.000Z",
  expirationTime: "2027-01-15T08:05:00.000Z",
  notBefore: "2027-01-15T07:59:00.000Z",
  requestId: "req-1",
  resources: ["https://gw.example.com/x402/cid/bafkreiaaaa"],
  signatureScheme: "eip191",
  signature: `0x${"ab".repeat(65)}`,
};

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const packageAnswer = (header: string) => {
  try {
    return parseSIWxHeader(header);
  } catch {
    return undefined;
  }
};

function headers(): string[] {
  const out: string[] = [encodeSIWxHeader(FULL as never)];
  const wrongValues: unknown[] = [null, 1, true, [], {}, [1], ["x"], "x", "eip1271", "ed25519", "siws", ""];
  for (const key of Object.keys(FULL)) {
    const { [key]: _, ...without } = FULL as Record<string, unknown>;
    out.push(b64(JSON.stringify(without)));
    for (const v of wrongValues) out.push(b64(JSON.stringify({ ...FULL, [key]: v })));
  }
  out.push(
    b64(JSON.stringify({ ...FULL, extra: "dropped", __proto__: { x: 1 } })),
    b64(JSON.stringify({ ...FULL, resources: [] })),
    b64(JSON.stringify({ ...FULL, resources: ["a", 2] })),
    b64(`{"__proto__": {"domain": "x"}, ${JSON.stringify(FULL).slice(1)}`),
    b64(JSON.stringify([FULL])),
    b64("null"),
    b64("42"),
    b64('"text"'),
    b64("{not json"),
    b64(JSON.stringify({ ...FULL, statement: "caf\u00e9 \u{1F600}" })),
    // invalid UTF-8 inside a string: both decode it with replacement characters
    Buffer.concat([
      Buffer.from(`{"domain":"`),
      Buffer.from([0xc3, 0x28, 0xff]),
      Buffer.from(`",${JSON.stringify(FULL).slice(12)}`),
    ]).toString("base64"),
  );
  const valid = out[0];
  out.push(
    valid.replace(/=+$/, ""), // no padding
    `${valid}=`,
    `${valid}===`,
    `${valid.slice(0, 10)}=${valid.slice(10)}`,
    `${valid.slice(0, -5)}`, // a length atob refuses or not, as it decides
    `${valid.slice(0, -6)}`,
    valid.replace(/\+/g, "-").replace(/\//g, "_"), // base64url is not the header's alphabet
    ` ${valid}`,
    `${valid.slice(0, 20)} ${valid.slice(20)}`,
    "",
    "====",
    "A",
    "AA",
    "AAA",
    "AAAA",
  );
  return out;
}

test("accepts what parseSIWxHeader accepts and returns the same payload, for every variant", () => {
  const all = headers();
  let accepted = 0;
  for (const header of all) {
    const expected = packageAnswer(header);
    if (expected !== undefined) accepted++;
    expect({ header, ours: decodeSiwxHeader(header) }).toStrictEqual({ header, ours: expected });
  }
  // the comparison covered both answers, not only refusals
  expect(accepted).toBeGreaterThan(20);
  expect(all.length - accepted).toBeGreaterThan(100);
});

test("unknown keys are dropped and the payload's keys come in the schema's order", () => {
  const shuffled = { zz: 1, ...Object.fromEntries(Object.entries(FULL).reverse()) };
  const ours = decodeSiwxHeader(b64(JSON.stringify(shuffled)));
  expect(Object.keys(ours ?? {})).toEqual(Object.keys(FULL));
});
