/**
 * Sign-in-with-x on the server (x402 specs/extensions/sign-in-with-x.md,
 * CAIP-122 / EIP-4361): the challenge the v2 402 advertises, and the check
 * of a SIGN-IN-WITH-X header against it. Who the signer is entitled to is
 * not decided here: `verify` only says which address proved itself, or why
 * not (a reason from x402/reasons.ts).
 *
 * What binds a sign-in to us and to now:
 * - `domain` and `uri` come from PUBLIC_URL, never from a Host header: a
 *   message signed for another site (or for a Host an attacker chose) does
 *   not verify here (X402.md trap 11).
 * - `uri` is this resource's URL: a sign-in for one file is not one for another.
 * - `issuedAt` at most 5 minutes old; `expirationTime`/`notBefore` honoured.
 * - The nonce is ours (an HMAC, below), at most 5 minutes old, and each
 *   (nonce, address) is accepted once, in the database (siwx-nonces.ts), so
 *   a captured header cannot be replayed, in this process or another.
 *
 * The message text is built by `@x402/extensions` (the same function its
 * clients sign with), so the bytes verified are the bytes signed.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { buildSIWxSchema, formatSIWEMessage } from "@x402/extensions/sign-in-with-x";
import { getAddress, type Hex } from "viem";
import { createSiweMessage } from "viem/siwe";
import { checksum } from "../chain/address";
import { hashMessage } from "../chain/keccak";
import { NETWORKS } from "../chain/networks";
import { recoverLowerCase } from "../gateway/proof";
import { type SiwxChallenge, SiwxProof } from "../x402/extensions";
import { Reason } from "../x402/reasons";
import { decodeSiwxHeader } from "./siwx-header";
import type { SiwxNonceStore } from "./siwx-nonces";

/**
 * The nonce's time bucket. All 402s of one resource within a bucket carry the
 * same challenge, so the 402 (the hot path) stays a cached, prebuilt
 * response and is rebuilt once per bucket, not once per request. A shorter
 * bucket costs more rebuilds; a longer one lets a buyer sign in at most once
 * per resource per bucket (see `verify`'s single-use rule).
 */
export const SIWX_BUCKET_SECONDS = 60;
/** How long a challenge (its nonce and its `issuedAt`) stays good: the spec's 5 minutes. */
export const SIWX_MAX_AGE_SECONDS = 300;
/** Clocks of the buyer, this process and another process on the database may disagree this much. */
export const SIWX_CLOCK_SKEW_SECONDS = 30;
/** An RPC that does not answer in time is "unavailable", never a hung request (X402.md trap 5). */
const CONTRACT_VERIFY_TIMEOUT_MS = 5_000;
/** Far longer than any honest proof (a 6492 signature included); decoding more is wasted work. */
const MAX_HEADER_LENGTH = 24_576;

const STATEMENT = "Sign in with the wallet that paid, to download again without paying again.";
/** Base and Base Sepolia, signed as plain EIP-191 messages (EIP-1271/6492 for smart wallets). */
const SUPPORTED_CHAINS = deepFreeze(
  [NETWORKS.base, NETWORKS["base-sepolia"]].map((n) => ({ chainId: n.caip2, type: "eip191" })),
);
const SUPPORTED_CHAIN_IDS = new Set<string>(SUPPORTED_CHAINS.map((c) => c.chainId));
const PROOF_SCHEMA = deepFreeze(buildSIWxSchema() as unknown as Record<string, unknown>);
const checkProof = TypeCompiler.Compile(SiwxProof);

/**
 * Checks a smart-wallet signature on chain (EIP-1271, or EIP-6492 for a
 * wallet not deployed yet), e.g. `(a) => publicClient.verifyMessage(a)` for
 * the client of chain `a.chainId`. True only when the wallet accepts it.
 */
export type ContractVerifier = (args: {
  address: `0x${string}`;
  message: string;
  signature: `0x${string}`;
  chainId: number;
}) => Promise<boolean>;

export interface SiwxOptions {
  /** PUBLIC_URL: its host is the `domain` every message must name. */
  publicUrl: string;
  /** Keys the nonces' HMAC. Any server secret: a sub-key is derived, the secret never signs a nonce itself. */
  secret: string;
  nonces: SiwxNonceStore;
  /** EIP-1271/6492 through an RPC; without it, smart-wallet signatures are refused with a reason. */
  verifyContract?: ContractVerifier;
  /** Unix seconds; the default for calls that pass no time. */
  nowSeconds?: () => number;
}

export type SiwxVerdict =
  /** `key`: what `use` records, when `verify` was asked not to (the caller spends it only when it serves). */
  { ok: true; address: `0x${string}`; key: string } | { ok: false; reason: SiwxReason; message: string };

export type SiwxReason = (typeof Reason)[Extract<keyof typeof Reason, `siwx${string}`>];

export interface Siwx {
  /**
   * The `extensions["sign-in-with-x"]` entry for the v2 402 of `resourceUrl`
   * (PUBLIC_URL + the resource's path). The same object for the whole
   * bucket: cache what is built from it by its identity.
   */
  challenge(resourceUrl: string, nowSeconds?: number): SiwxChallenge;
  /**
   * Checks a SIGN-IN-WITH-X header for `resourceUrl`. Never throws; a refusal
   * carries a reason code and a plain sentence. The sign-in is spent (single
   * use) unless `consume: false`: then the caller spends it with `use` only
   * when it serves, so a HEAD or a wallet that owns nothing burns nothing.
   */
  verify(
    header: string,
    resourceUrl: string,
    nowSeconds?: number,
    options?: { consume?: boolean },
  ): Promise<SiwxVerdict>;
  /** Spends a verified sign-in (its verdict's `key`); a refusal when it was used already. */
  use(key: string, nowSeconds?: number): Promise<SiwxVerdict | undefined>;
}

const fail = (reason: SiwxReason, message: string): SiwxVerdict => ({ ok: false, reason, message });

export function createSiwx(options: SiwxOptions): Siwx {
  const publicUrl = new URL(options.publicUrl);
  const domain = publicUrl.host;
  const clock = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  // A sub-key for nonces only: the configured secret may sign other things (tokens), and a
  // nonce must never be usable as one of those, nor the other way round.
  const nonceKey = createHmac("sha256", options.secret).update("cidgate siwx nonce v1").digest();

  /*
   * The nonce is stateless: 8 hex digits of the bucket number, then 24 of
   * HMAC(key, bucket || resource URL). Nothing is stored when it is issued
   * (so the cached 402 can carry it, and a flood of 402s writes nothing);
   * `verify` recomputes the HMAC to know it is ours, for this resource, and
   * reads its age from the bucket. 32 hex characters, as the spec's nonce
   * and EIP-4361's alphanumeric rule want. 96 bits of MAC: a forger has to
   * guess it online, one request per guess.
   */
  const mac = (bucket: number, resourceUrl: string): Buffer => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(bucket >>> 0);
    return createHmac("sha256", nonceKey).update(b).update(resourceUrl).digest().subarray(0, 12);
  };
  const nonceFor = (bucket: number, resourceUrl: string) =>
    (bucket >>> 0).toString(16).padStart(8, "0") + mac(bucket, resourceUrl).toString("hex");

  const challenges = new Map<string, { bucket: number; entry: SiwxChallenge }>();
  const CHALLENGES_MAX = 50_000;

  function challenge(resourceUrl: string, nowSeconds = clock()): SiwxChallenge {
    const bucket = Math.floor(nowSeconds / SIWX_BUCKET_SECONDS);
    const hit = challenges.get(resourceUrl);
    if (hit && hit.bucket === bucket) return hit.entry;
    const issuedAt = bucket * SIWX_BUCKET_SECONDS;
    // Frozen: callers cache what they build from it by identity, so nobody may change it.
    const entry: SiwxChallenge = deepFreeze({
      info: {
        domain,
        uri: resourceUrl,
        version: "1",
        nonce: nonceFor(bucket, resourceUrl),
        issuedAt: new Date(issuedAt * 1000).toISOString(),
        expirationTime: new Date((issuedAt + SIWX_MAX_AGE_SECONDS) * 1000).toISOString(),
        statement: STATEMENT,
        resources: [resourceUrl],
      },
      supportedChains: SUPPORTED_CHAINS,
      schema: PROOF_SCHEMA,
    });
    if (challenges.size >= CHALLENGES_MAX && !hit) challenges.clear();
    challenges.set(resourceUrl, { bucket, entry });
    return entry;
  }

  /** Null when the nonce is ours for this resource and young enough, else the refusal. */
  function checkNonce(nonce: string, resourceUrl: string, now: number): SiwxVerdict | null {
    if (!/^[0-9a-f]{32}$/.test(nonce)) return fail(Reason.siwxInvalidNonce, "nonce was not issued by this server");
    const bucket = Number.parseInt(nonce.slice(0, 8), 16);
    const given = Buffer.from(nonce.slice(8), "hex");
    if (!timingSafeEqual(given, mac(bucket, resourceUrl))) {
      return fail(Reason.siwxInvalidNonce, "nonce was not issued by this server for this resource");
    }
    const issued = bucket * SIWX_BUCKET_SECONDS;
    if (issued > now + SIWX_CLOCK_SKEW_SECONDS || now - issued > SIWX_MAX_AGE_SECONDS) {
      return fail(Reason.siwxNonceExpired, "nonce is too old: sign the current challenge");
    }
    return null;
  }

  /** Null when the message's own time fields hold now, else the refusal. */
  function checkTimes(proof: SiwxProof, now: number): SiwxVerdict | null {
    const issuedAt = isoSeconds(proof.issuedAt);
    if (issuedAt === undefined) return fail(Reason.siwxInvalidHeader, "issuedAt is not an ISO 8601 time");
    if (issuedAt > now + SIWX_CLOCK_SKEW_SECONDS) return fail(Reason.siwxIssuedAtInFuture, "issuedAt is in the future");
    if (now - issuedAt > SIWX_MAX_AGE_SECONDS) {
      return fail(Reason.siwxIssuedAtTooOld, "issuedAt is more than 5 minutes ago");
    }
    if (proof.expirationTime !== undefined) {
      const expires = isoSeconds(proof.expirationTime);
      if (expires === undefined) return fail(Reason.siwxInvalidHeader, "expirationTime is not an ISO 8601 time");
      if (expires <= now) return fail(Reason.siwxExpired, "the sign-in message has expired");
    }
    if (proof.notBefore !== undefined) {
      const notBefore = isoSeconds(proof.notBefore);
      if (notBefore === undefined) return fail(Reason.siwxInvalidHeader, "notBefore is not an ISO 8601 time");
      if (notBefore > now + SIWX_CLOCK_SKEW_SECONDS)
        return fail(Reason.siwxNotYetValid, "the sign-in message is not valid yet");
    }
    return null;
  }

  /** Null when `signature` is `address`'s over `message`, else the refusal. */
  async function checkSignature(proof: SiwxProof, message: string): Promise<SiwxVerdict | null> {
    const signature = proof.signature as Hex;
    const address = proof.address.toLowerCase();
    // 65 bytes is an EOA's r||s||v: recovered locally (libsecp256k1, ~50 us), no RPC. The EIP-191
    // hash is the native keccak's (chain/keccak.ts: ~4 us for this ~450-byte text, ~70 us in viem's JS).
    if (signature.length === 132 && (await recoverLowerCase(hashMessage(message), signature)) === address) return null;
    const verifyContract = options.verifyContract;
    if (!verifyContract) {
      return signature.length === 132
        ? fail(Reason.siwxInvalidSignature, "the signature is not the address's key (no RPC here for smart wallets)")
        : fail(Reason.siwxSmartWalletUnsupported, "smart-wallet signatures cannot be checked here (no RPC configured)");
    }
    // A contract wallet (EIP-1271), deployed or not (EIP-6492), decides itself; it may take 65 bytes too.
    const chainId = Number(proof.chainId.slice("eip155:".length));
    let accepted: boolean;
    try {
      accepted = await withTimeout(
        verifyContract({ address: getAddress(proof.address), message, signature, chainId }),
        CONTRACT_VERIFY_TIMEOUT_MS,
      );
    } catch {
      return fail(Reason.siwxUnavailable, "the wallet's signature could not be checked now; try again");
    }
    return accepted ? null : fail(Reason.siwxInvalidSignature, "the signature is not the address's");
  }

  let prunedBucket = -1;
  /** Forgets used nonces that can no longer verify, at most once per bucket, in passing. */
  function pruneNonces(now: number) {
    const bucket = Math.floor(now / SIWX_BUCKET_SECONDS);
    if (bucket === prunedBucket) return;
    prunedBucket = bucket;
    // A busy database (or, on PostgreSQL, a promise that fails later): the next bucket tries again;
    // nothing depends on it, and a failure must not become an unhandled rejection.
    try {
      const pruned = options.nonces.prune(
        now - SIWX_MAX_AGE_SECONDS - SIWX_BUCKET_SECONDS - 2 * SIWX_CLOCK_SKEW_SECONDS,
      );
      if (pruned instanceof Promise) pruned.catch(() => undefined);
    } catch {}
  }

  /**
   * Records a sign-in as used; a refusal when it was used already (or cannot be recorded). Answered
   * once the database has committed it, with the other sign-ins of the same moment (`useSoon`).
   */
  async function spend(key: string, now: number): Promise<SiwxVerdict | undefined> {
    pruneNonces(now);
    let first: boolean;
    try {
      first = await options.nonces.useSoon(key, now);
    } catch {
      return fail(Reason.siwxUnavailable, "the sign-in could not be recorded now; try again");
    }
    return first ? undefined : fail(Reason.siwxNonceReused, "this sign-in was used already: sign a new challenge");
  }

  async function verify(
    header: string,
    resourceUrl: string,
    nowSeconds = clock(),
    { consume = true }: { consume?: boolean } = {},
  ): Promise<SiwxVerdict> {
    try {
      const now = Math.floor(nowSeconds);
      if (header.length === 0 || header.length > MAX_HEADER_LENGTH) {
        return fail(Reason.siwxInvalidHeader, "SIGN-IN-WITH-X must be base64 JSON of a sign-in proof");
      }
      let proof: SiwxProof;
      try {
        // Read as the package's parseSIWxHeader reads it (siwx-header.ts); our model then bounds every field.
        const parsed: unknown = decodeSiwxHeader(header.trim());
        if (parsed === undefined || !checkProof.Check(parsed)) throw new Error("shape");
        proof = parsed;
      } catch {
        return fail(Reason.siwxInvalidHeader, "SIGN-IN-WITH-X must be base64 JSON of a sign-in proof");
      }
      if (proof.version !== "1") return fail(Reason.siwxInvalidHeader, "version must be 1");
      if (proof.domain !== domain) return fail(Reason.siwxDomainMismatch, `domain must be ${domain}`);
      if (proof.uri !== resourceUrl) return fail(Reason.siwxUriMismatch, "uri must be this resource's URL");
      if (!SUPPORTED_CHAIN_IDS.has(proof.chainId) || proof.type !== "eip191") {
        return fail(Reason.siwxUnsupportedChain, "sign in on Base or Base Sepolia with an EIP-191 signature");
      }
      const late = checkTimes(proof, now) ?? checkNonce(proof.nonce, resourceUrl, now);
      if (late) return late;

      const message = siweMessage(proof);
      if (message === undefined) {
        return fail(Reason.siwxInvalidHeader, "the fields do not form a valid EIP-4361 message");
      }
      const bad = await checkSignature(proof, message);
      if (bad) return bad;

      // Last, so that a forged signature cannot burn someone's nonce. Keyed by (nonce, address):
      // every buyer of a resource shares the bucket's challenge, and one buyer's sign-in must not
      // refuse another's; the same signer's header again is a replay.
      const key = `${proof.nonce}:${proof.address.toLowerCase()}`;
      if (consume) {
        const used = await spend(key, now);
        if (used) return used;
      }
      return { ok: true, address: checksum(proof.address), key };
    } catch {
      // Nothing above should throw; if something does, the buyer gets a reason, never a stack.
      return fail(Reason.siwxUnavailable, "the sign-in could not be checked now; try again");
    }
  }

  return { challenge, verify, use: (key, nowSeconds = clock()) => spend(key, Math.floor(nowSeconds)) };
}

/**
 * The EIP-4361 text the client signed, or undefined when the fields cannot
 * form one (a bad checksum, a bad URI, a newline in the statement).
 *
 * `@x402/extensions` builds it (its clients sign exactly that) through a
 * SIWE library that re-parses the text with an ABNF grammar: ~400 us, more
 * than the rest of `verify` together. viem's `createSiweMessage` writes the
 * same EIP-4361 text (the test suite checks they agree on every field our
 * challenge and the spec use). viem takes times as Dates, so it is used only
 * when each time is already in the form a Date prints back (`toISOString`,
 * as our challenge issues them); any other spelling, and anything viem
 * refuses, goes through the package's builder.
 *
 * Every buyer of a resource signs the same minute's challenge, so the text
 * differs between them only in the address (the second line). viem's text
 * is made once per set of the other fields, around a placeholder address,
 * and kept (`TEMPLATES`); each sign-in puts its address, checksummed with
 * the native keccak, in its place. viem's own validation and checksum (in
 * JS) cost ~30-80 us a message; the cached text ~2 us.
 */
export function siweMessage(proof: SiwxProof): string | undefined {
  if (proof.version === "1" && ADDRESS.test(proof.address)) {
    const key = JSON.stringify([
      proof.domain,
      proof.statement,
      proof.uri,
      proof.chainId,
      proof.nonce,
      proof.issuedAt,
      proof.expirationTime,
      proof.notBefore,
      proof.requestId,
      proof.resources,
    ]);
    let around = TEMPLATES.get(key);
    if (around === undefined) {
      around = viemTemplate(proof);
      if (TEMPLATES.size >= TEMPLATES_MAX) TEMPLATES.clear();
      TEMPLATES.set(key, around);
    }
    if (around) return `${around[0]}${checksum(proof.address)}${around[1]}`;
  }
  try {
    const { address, signature: _signature, signatureScheme: _scheme, ...info } = proof;
    return formatSIWEMessage({ ...info, type: "eip191" }, address);
  } catch {
    return undefined;
  }
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** Any address viem has checksummed once (its cache): the zero address, which has no letters. */
const PLACEHOLDER = "0x0000000000000000000000000000000000000000";
/** viem's text before and after the address line, by the other fields; null: the package's builder decides. */
const TEMPLATES = new Map<string, readonly [string, string] | null>();
const TEMPLATES_MAX = 1024;

/**
 * viem's text for these fields around the placeholder address, split where
 * the address goes: the whole second line (the domain before it holds no
 * newline: viem checks the domain). Null when viem cannot write it.
 */
function viemTemplate(proof: SiwxProof): readonly [string, string] | null {
  const times = [proof.issuedAt, proof.expirationTime, proof.notBefore];
  if (!times.every((x) => x === undefined || roundTrips(x))) return null;
  try {
    const text = createSiweMessage({
      domain: proof.domain,
      address: PLACEHOLDER,
      statement: proof.statement,
      uri: proof.uri,
      version: "1",
      chainId: Number(proof.chainId.slice("eip155:".length)),
      nonce: proof.nonce,
      issuedAt: new Date(proof.issuedAt),
      expirationTime: proof.expirationTime === undefined ? undefined : new Date(proof.expirationTime),
      notBefore: proof.notBefore === undefined ? undefined : new Date(proof.notBefore),
      requestId: proof.requestId,
      resources: proof.resources,
    });
    const at = text.indexOf("\n") + 1;
    if (text.slice(at, at + 43) !== `${PLACEHOLDER}\n`) return null;
    return [text.slice(0, at), text.slice(at + 42)];
  } catch {
    // viem refused a field: the package's builder decides.
    return null;
  }
}

function roundTrips(iso: string): boolean {
  const ms = Date.parse(iso);
  return Number.isFinite(ms) && new Date(ms).toISOString() === iso;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** Unix seconds of an ISO 8601 date-time with a zone, or undefined. */
function isoSeconds(value: string): number | undefined {
  // A zone is required: a zoneless time is read in the server's local zone, not the signer's.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("timeout")), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
