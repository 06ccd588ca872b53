/**
 * Decoding a SIGN-IN-WITH-X header: standard base64 of UTF-8 JSON, as
 * `@x402/extensions`' clients encode it, read exactly as its
 * `parseSIWxHeader` reads it (the same base64 alphabet test, `atob`, a
 * non-fatal UTF-8 decode, `JSON.parse`, then the payload schema: the same
 * required strings, the same enums, unknown keys dropped), without zod,
 * whose object parse was most of the package's ~10-20 us a header. A test
 * feeds both the same valid, mutated and malformed headers and wants the
 * same answer from each. Our TypeBox model (`SiwxProof`) then bounds every
 * field, as it did after the package's parse.
 */
/** The package's test before decoding (`Base64EncodedRegex` of @x402/core). */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const utf8 = new TextDecoder("utf-8");

const REQUIRED = ["domain", "address", "uri", "version", "chainId", "nonce", "issuedAt", "signature"] as const;
const OPTIONAL = ["statement", "expirationTime", "notBefore", "requestId"] as const;
const TYPES = new Set(["eip191", "ed25519"]);
const SCHEMES = new Set(["eip191", "eip1271", "eip6492", "siws"]);

/**
 * The payload the header carries, with only the schema's keys (in the
 * schema's order), or undefined where `parseSIWxHeader` throws. Not yet
 * bounded: check it with `SiwxProof` before use.
 */
export function decodeSiwxHeader(header: string): Record<string, unknown> | undefined {
  if (!BASE64.test(header)) return undefined;
  let json: unknown;
  try {
    // atob, not Buffer: atob refuses what the package refuses (a stray length, misplaced padding).
    json = JSON.parse(utf8.decode(Buffer.from(atob(header), "latin1")));
  } catch {
    return undefined;
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined;
  const raw = json as Record<string, unknown>;
  for (const key of REQUIRED) if (typeof raw[key] !== "string") return undefined;
  for (const key of OPTIONAL) if (raw[key] !== undefined && typeof raw[key] !== "string") return undefined;
  if (!TYPES.has(raw.type as string)) return undefined;
  if (raw.signatureScheme !== undefined && !SCHEMES.has(raw.signatureScheme as string)) return undefined;
  const resources = raw.resources;
  if (resources !== undefined && (!Array.isArray(resources) || resources.some((r) => typeof r !== "string")))
    return undefined;
  // The schema's keys in its order, as zod returns them: the optional ones only when given, the rest dropped.
  const out: Record<string, unknown> = { domain: raw.domain, address: raw.address };
  if (raw.statement !== undefined) out.statement = raw.statement;
  out.uri = raw.uri;
  out.version = raw.version;
  out.chainId = raw.chainId;
  out.type = raw.type;
  out.nonce = raw.nonce;
  out.issuedAt = raw.issuedAt;
  if (raw.expirationTime !== undefined) out.expirationTime = raw.expirationTime;
  if (raw.notBefore !== undefined) out.notBefore = raw.notBefore;
  if (raw.requestId !== undefined) out.requestId = raw.requestId;
  if (resources !== undefined) out.resources = [...(resources as string[])];
  if (raw.signatureScheme !== undefined) out.signatureScheme = raw.signatureScheme;
  out.signature = raw.signature;
  return out;
}
