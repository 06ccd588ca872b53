/**
 * The purchase decision: what GET|HEAD /x402/cid/:cid answers, with no HTTP
 * types. From the CID, the credentials presented and the clock it decides
 * one of: offer (402), refuse (403 + reason), serve (file, range, receipt),
 * pending, unavailable, conflict, not found. Every rule of who may download
 * without paying (again) lives here: the same proof re-presented
 * (`existing`), and a wallet with an active entitlement proving itself by a
 * fresh authorization, a sign-in or an access token. routes.ts only turns a
 * decision into a Response (the x402 packages' split: a framework-free core
 * returning a result, a thin adapter per framework).
 *
 * Settle before serve: nothing decides `serve` for a new proof before the
 * ledger settler says it is paid.
 */
import type { NetworkName } from "../chain/networks";
import { parseCid } from "../content/cid";
import { type OpenFile, openIndexedFile } from "../content/file-handle";
import type { AccessTokens } from "../entitlements/access-token";
import { parseAccessPolicy } from "../entitlements/policy";
import type { Siwx } from "../entitlements/siwx";
import type { PaymentIdentifierStore } from "../ledger/payment-identifiers";
import type { LedgerSettler, Outcome, PaymentAttempt, Timings } from "../ledger/settler";
import { isUnconfirmed, type Payment, type PaymentStore } from "../ledger/store";
import type { PaymentIdentifierEntry, SiwxChallenge } from "../x402/extensions";
import type { FacilitatorRequest, Receipt, X402Version } from "../x402/models";
import { paymentIdentifierExtension, paymentPayloadHash, readPaymentIdentifier } from "../x402/payment-identifier";
import { Reason } from "../x402/reasons";
import type { Catalog, PricedContent } from "./catalog";
import { type DecodedProof, decodeProof, matchAndCheck, VALID_BEFORE_SKEW_SECONDS } from "./proof";
import { type ByteRange, parseRange } from "./range";
import { buildReceipt } from "./receipts";
import type { AcceptedRequirement } from "./requirements";
import type { VerifyLimiter } from "./verify-limiter";

/** What the buyer presented: a payment proof, or proof of an earlier purchase. */
export interface Credentials {
  /** PAYMENT-SIGNATURE (v2); wins over X-PAYMENT when both are sent. */
  paymentSignature?: string | null;
  /** X-PAYMENT (v1). */
  xPayment?: string | null;
  /** Access tokens from earlier paid or entitled answers (bearer, cookie): the first that opens the file counts. */
  accessTokens?: readonly string[];
  /** SIGN-IN-WITH-X: the buyer's wallet signs in (the `sign-in-with-x` extension). */
  signIn?: string | null;
}

export interface PurchaseRequest {
  /** As the client spelled it (any multibase, v0 or v1). */
  cid: string;
  credentials: Credentials;
  /** False for HEAD: say what GET would for a proof already paid, never charge. */
  charge: boolean;
  /** The Range header: an unsatisfiable one is answered before anyone is charged. */
  range?: string | null;
  /** The client's address (http/client-address.ts), for the limit on failed verifications; unknown: the payer's alone. */
  client?: string;
}

export type Decision =
  | { kind: "notFound"; message: string }
  /** The 402; `extensions` are the v2 offer's (sign-in-with-x, payment-identifier), the same object for a minute. */
  | { kind: "offer"; item: PricedContent; extensions: OfferExtensions }
  | { kind: "refuse"; item: PricedContent; x402Version: X402Version; reason: string; message: string }
  | {
      kind: "serve";
      item: PricedContent;
      x402Version: X402Version;
      /** The settlement behind this download; none for a manual grant. */
      receipt: Receipt | undefined;
      range: ByteRange | undefined;
      /** A token for later downloads, when an entitlement stands behind this one. */
      access?: { token: string; expiresAt: number };
      timings?: Timings;
      /** The file, opened and checked (before the charge, when there is one): what the body streams from. */
      file?: OpenFile;
    }
  | { kind: "rangeNotSatisfiable"; item: PricedContent }
  /** payment-identifier: this id came before with another payment (409). */
  | { kind: "conflict"; reason: string; message: string }
  /** Sent to the chain, not confirmed yet: the same proof again shortly is served. */
  | { kind: "pending"; message: string }
  /**
   * The facilitator (or chain) gave no answer: nothing was decided, the same proof may come again.
   * `code` facilitator_untrusted: it claimed a settlement the chain does not show (ledger/chain-check.ts).
   */
  | { kind: "unavailable"; message: string; code?: "facilitator_untrusted" }
  /** Paid, but the file changed under its CID while the payment settled: the entitlement stands, come back (503). */
  | { kind: "fileChanged"; message: string }
  /** Too many proofs the facilitator refused, from this client or payer (verify-limiter.ts): 429. */
  | { kind: "tooManyFailures"; retryAfterSeconds: number };

/** An entitlement as the decision needs it (src/entitlements/store.ts). */
export interface ActiveEntitlement {
  id: number;
  paymentId: number | null;
  expiresAt: number | null;
}

export interface PurchaseDeps {
  catalog: Pick<Catalog, "lookup">;
  payments: Pick<PaymentStore, "findByProof" | "get" | "heldFor">;
  settler: Pick<LedgerSettler, "pay" | "confirmHeld">;
  entitlements: {
    active(
      payer: string,
      cid: string,
      instructionId: string,
      nowSeconds: number,
    ): ActiveEntitlement | undefined | Promise<ActiveEntitlement | undefined>;
  };
  accessTokens: AccessTokens;
  siwx: Pick<Siwx, "challenge" | "verify" | "use">;
  paymentIdentifiers: Pick<PaymentIdentifierStore, "remember" | "attach" | "release">;
  /** VERIFY_FAILURES_PER_MINUTE per client and payer; none: unlimited (tests of other things). */
  verifyLimiter?: Pick<VerifyLimiter, "blocked" | "reserve">;
  /** ACCESS_TOKEN_TTL, in seconds. */
  accessTokenTtlSeconds: number;
  /** Unix seconds. */
  now?: () => number;
}

/** What a v2 offer carries besides its requirements. */
export interface OfferExtensions {
  "sign-in-with-x": SiwxChallenge;
  "payment-identifier": PaymentIdentifierEntry;
}

// Built once: a 404 for a CID nobody sells is as hot as a 402.
const NOT_PRICED: Decision = { kind: "notFound", message: "no paid content for this CID" };
const NOT_A_CID: Decision = { kind: "notFound", message: "not a CID" };

const FILE_CHANGED: Decision = {
  kind: "fileChanged",
  message: "the file changed while your payment settled; your purchase stands",
};

/**
 * Runs `decide` with the file opened and checked first (file-handle.ts): a
 * `serve` gets the handle, checked again (after a charge the file may have
 * moved on); anything else closes it. Gone or other bytes before: not sold.
 */
async function withOpenFile(item: PricedContent, decide: () => Promise<Decision>): Promise<Decision> {
  const file = await openIndexedFile(item.file, item.cid);
  if (!file) return NOT_PRICED;
  let d: Decision;
  try {
    d = await decide();
  } catch (e) {
    await file.close();
    throw e;
  }
  if (d.kind !== "serve") {
    await file.close();
    return d;
  }
  if (await file.stillSame()) return { ...d, file };
  await file.close();
  // Paid for these bytes and cannot send them: the payment and its entitlement stand, the buyer comes back.
  return d.receipt ? FILE_CHANGED : NOT_PRICED;
}

/** What the ledger settler is given: the row to claim and our own offer, never the client's copy of it. */
function attemptOf(item: PricedContent, requirement: AcceptedRequirement, proof: DecodedProof): PaymentAttempt {
  const request: FacilitatorRequest =
    proof.raw.x402Version === 2
      ? { x402Version: 2, paymentPayload: proof.raw, paymentRequirements: requirement.v2 }
      : { x402Version: 1, paymentPayload: proof.raw, paymentRequirements: requirement.v1 };
  return {
    claim: {
      network: requirement.network,
      asset: requirement.asset,
      payer: proof.from,
      nonce: proof.nonce,
      cid: item.cid,
      instructionId: item.instruction.id,
      instructionVersion: item.instruction.version,
      amount: proof.value.toString(),
      payTo: requirement.payTo,
      validBefore: proof.validBefore,
      x402Version: proof.x402Version,
      proofHash: proof.proofHash,
    },
    request,
    access: accessOf(item),
  };
}

/** The instruction's access policy, as the settlement grants it. */
function accessOf(item: PricedContent): PaymentAttempt["access"] {
  const policy = parseAccessPolicy(item.instruction.access);
  return policy && { policy, scope: item.instruction.access_scope };
}

/** A 65-byte signature was recovered locally to `from`; a longer one (a smart wallet) only the chain can check. */
const checkedLocally = (proof: DecodedProof) => proof.signature.length === 2 + 65 * 2;

export function createPurchase(deps: PurchaseDeps) {
  const now = deps.now ?? (() => Math.floor(Date.now() / 1000));
  /** Purchases settling now, by payer and CID: a second one from the same buyer waits for the first. */
  const buying = new Map<string, { nonce: string; done: Promise<unknown> }>();

  /**
   * The offer. Its sign-in challenge changes once a minute (a stateless
   * nonce), so the extensions object is the same for a minute: the adapter
   * keeps one prebuilt 402 per offer and extensions object.
   */
  const extensionsByChallenge = new WeakMap<SiwxChallenge, OfferExtensions>();
  function offer(item: PricedContent): Decision {
    const challenge = deps.siwx.challenge(item.required.resourceUrl, now());
    let extensions = extensionsByChallenge.get(challenge);
    if (!extensions) {
      extensions = { "sign-in-with-x": challenge, "payment-identifier": paymentIdentifierExtension() };
      extensionsByChallenge.set(challenge, extensions);
    }
    return { kind: "offer", item, extensions };
  }

  const refuse = (item: PricedContent, proof: DecodedProof, reason: string, message: string): Decision => ({
    kind: "refuse",
    item,
    x402Version: proof.x402Version,
    reason,
    message,
  });

  /** The payer's active entitlement to this item, by CID or by its instruction. */
  const activeFor = (payer: string, item: PricedContent) =>
    deps.entitlements.active(payer, item.cid, item.instruction.id, now());

  /** A token for later downloads, never outliving the entitlement behind it. */
  async function accessFor(payer: string, item: PricedContent, entitlement: ActiveEntitlement | undefined) {
    if (!entitlement) return undefined;
    const expiresAt = Math.min(now() + deps.accessTokenTtlSeconds, entitlement.expiresAt ?? Number.POSITIVE_INFINITY);
    return {
      token: await deps.accessTokens.sign({ payer: payer as `0x${string}`, cid: item.cid, exp: expiresAt }),
      expiresAt,
    };
  }

  async function serve(
    item: PricedContent,
    x402Version: X402Version,
    payer: string,
    payment: Payment | undefined,
    range: ByteRange | "unsatisfiable" | undefined,
    entitlement: ActiveEntitlement | undefined | Promise<ActiveEntitlement | undefined>,
    timings?: Timings,
  ): Promise<Decision> {
    if (range === "unsatisfiable") return { kind: "rangeNotSatisfiable", item };
    const granted = await entitlement;
    const receipt = payment?.txHash
      ? buildReceipt(x402Version, payment.network as NetworkName, payment.txHash, payment.payer)
      : undefined;
    const access = await accessFor(payer, item, granted);
    return { kind: "serve", item, x402Version, receipt, range, access, timings };
  }

  /** Served on an entitlement: no settlement, no charge; the receipt is the original payment's. */
  async function serveEntitled(
    item: PricedContent,
    x402Version: X402Version,
    payer: string,
    entitlement: ActiveEntitlement,
    range: ByteRange | "unsatisfiable" | undefined,
  ) {
    const payment = entitlement.paymentId === null ? undefined : await deps.payments.get(entitlement.paymentId);
    return serve(item, x402Version, payer, payment, range, entitlement);
  }

  /**
   * Until when a settled proof may be presented again: its validBefore, and
   * never past the cap a proof is held to now (a row settled before the cap
   * existed may carry a validBefore of 2^53-1).
   */
  const servedUntil = (row: Payment, item: PricedContent) =>
    Math.min(
      row.validBefore,
      Math.floor(Date.parse(row.createdAt) / 1000) +
        (item.required.accepts[0]?.v2.maxTimeoutSeconds ?? 0) +
        Number(VALID_BEFORE_SKEW_SECONDS),
    );

  /** This proof's settled row for this CID, if it paid for it before. */
  async function paidBefore(item: PricedContent, proof: DecodedProof): Promise<Payment | undefined> {
    if (!proof.network) return undefined;
    const row = await deps.payments.findByProof({
      network: proof.network,
      payer: proof.from,
      nonce: proof.nonce,
      proofHash: proof.proofHash,
    });
    return row?.state === "settled" && row.cid === item.cid ? row : undefined;
  }

  /**
   * What a stored row of this authorization means for a request presenting
   * `proof` for `item`: the one rule for "paid already" by proof. The same
   * proof for the same CID is served again at no charge until its
   * validBefore (capped at now + maxTimeoutSeconds + 30 s when it was
   * accepted: a buyer whose response was lost retries), and told to come
   * back while it is still being settled; anything else is refused. Access
   * after that window goes through an entitlement.
   */
  function existing(
    item: PricedContent,
    proof: DecodedProof,
    row: Payment,
    range: ByteRange | "unsatisfiable" | undefined,
  ): Decision | Promise<Decision> {
    const sameProof = row.cid === item.cid && row.proofHash === proof.proofHash;
    if (row.state === "settled" && sameProof) {
      if (now() >= servedUntil(row, item))
        return refuse(item, proof, Reason.validBefore, "the authorization has expired");
      return serve(item, proof.x402Version, proof.from, row, range, activeFor(proof.from, item));
    }
    // The same proof for the same CID still settling (the settler watched it for the facilitator
    // timeout): its buyer is told to come back, never refused.
    if (row.state === "pending" && sameProof)
      return { kind: "pending", message: "this payment is still being settled" };
    if (row.state === "pending") {
      return refuse(
        item,
        proof,
        Reason.paymentInProgress,
        isUnconfirmed(row)
          ? "this authorization's settlement is unconfirmed: only the same proof for the same content can complete it"
          : "this authorization is being settled by another request",
      );
    }
    return refuse(item, proof, Reason.paymentAlreadyUsed, "this authorization has already paid for other content");
  }

  /**
   * Synchronous up to the offer and the undecodable proof: no promise, no
   * microtask on the hot path. A decoded proof goes on to `withProof`, an
   * access token to `withToken`.
   */
  function decide(request: PurchaseRequest): Decision | Promise<Decision> {
    const item = deps.catalog.lookup(request.cid);
    return item instanceof Promise ? item.then((i) => decideFor(i, request)) : decideFor(item, request);
  }

  function decideFor(item: PricedContent | undefined, request: PurchaseRequest): Decision | Promise<Decision> {
    if (!item) return parseCid(request.cid) ? NOT_PRICED : NOT_A_CID;
    const { paymentSignature, xPayment, accessTokens, signIn } = request.credentials;
    const header = paymentSignature ?? xPayment;
    if (!header) {
      if (accessTokens) return withToken(item, accessTokens, request);
      return signIn ? withSignIn(item, signIn, request) : offer(item);
    }
    // A client over its limit of refused proofs: answered before the proof is even decoded.
    const wait = request.charge && request.client ? (deps.verifyLimiter?.blocked(request.client) ?? 0) : 0;
    if (wait > 0) return { kind: "tooManyFailures", retryAfterSeconds: wait };
    const decoded = decodeProof(header);
    if (!decoded.ok) return { kind: "refuse", item, x402Version: paymentSignature ? 2 : 1, ...decoded.rejection };
    return withProof(item, decoded.value, request);
  }

  /**
   * An access token: served while its payer's entitlement stands; expired, revoked or forged, the
   * offer, unless the request also signs in (a browser sends its stale cookie with every request,
   * and it must not hide an entitled wallet's sign-in: that buyer would be offered a second charge).
   */
  async function withToken(
    item: PricedContent,
    tokens: readonly string[],
    request: PurchaseRequest,
  ): Promise<Decision> {
    for (const token of tokens) {
      const claims = await deps.accessTokens.verify(token, item.cid, now());
      const entitlement = claims && (await activeFor(claims.payer, item));
      if (!claims || !entitlement) continue;
      return withOpenFile(item, () =>
        serveEntitled(item, 2, claims.payer, entitlement, parseRange(request.range, item.file.size)),
      );
    }
    // A browser sends its cookie on every request: a stale one must not hide a sign-in.
    const signIn = request.credentials.signIn;
    return signIn ? withSignIn(item, signIn, request) : offer(item);
  }

  /**
   * Sign-in-with-x: a wallet that owns the file downloads it again without
   * paying; any other wallet gets the offer. A sign-in that is not valid
   * (another site's, replayed, stale, forged) is refused with its reason.
   */
  async function withSignIn(item: PricedContent, header: string, request: PurchaseRequest): Promise<Decision> {
    const verdict = await deps.siwx.verify(header, item.required.resourceUrl, now(), { consume: false });
    if (!verdict.ok) return { kind: "refuse", item, x402Version: 2, reason: verdict.reason, message: verdict.message };
    const entitlement = await activeFor(verdict.address, item);
    if (!entitlement) return offer(item);
    return withOpenFile(item, async () => {
      // Spent only when it opens the file: a HEAD, or a wallet that owns nothing, may sign in again.
      if (request.charge) {
        const used = await deps.siwx.use(verdict.key, now());
        if (used && !used.ok)
          return { kind: "refuse", item, x402Version: 2, reason: used.reason, message: used.message };
      }
      return serveEntitled(item, 2, verdict.address, entitlement, parseRange(request.range, item.file.size));
    });
  }

  async function withProof(item: PricedContent, proof: DecodedProof, request: PurchaseRequest): Promise<Decision> {
    const wait = request.charge ? (deps.verifyLimiter?.blocked(request.client, proof.from) ?? 0) : 0;
    if (wait > 0) return { kind: "tooManyFailures", retryAfterSeconds: wait };
    const range = parseRange(request.range, item.file.size);
    const matched = await matchAndCheck(proof, item.required.accepts, now());
    if (!matched.ok) {
      // The price may have changed since this proof was settled: a paid proof still serves.
      const row = matched.rejection.reason !== Reason.signature ? await paidBefore(item, proof) : undefined;
      if (row && now() < servedUntil(row, item))
        return withOpenFile(item, () =>
          serve(item, proof.x402Version, proof.from, row, range, activeFor(proof.from, item)),
        );
      return refuse(item, proof, matched.rejection.reason, matched.rejection.message);
    }
    // Never charge for a file that is gone or changed since it was indexed; what is paid for streams
    // from the handle opened here, so a delete or a rename during the settle cannot take it away.
    return withOpenFile(item, () => charge(item, proof, matched.value, request, range));
  }

  async function charge(
    item: PricedContent,
    proof: DecodedProof,
    requirement: AcceptedRequirement,
    request: PurchaseRequest,
    range: ByteRange | "unsatisfiable" | undefined,
  ): Promise<Decision> {
    // A fresh authorization from a buyer who owns the file: served, never settled (stock x402
    // clients sign a new one on every 402, so a retry or a re-download would otherwise pay again).
    const entitled = checkedLocally(proof) ? await activeFor(proof.from, item) : undefined;
    if (entitled) return serveEntitled(item, proof.x402Version, proof.from, entitled, range);

    if (!request.charge) {
      const row = await paidBefore(item, proof);
      return row ? existing(item, proof, row, range) : offer(item);
    }
    // Nobody pays for bytes that cannot be sent.
    if (range === "unsatisfiable") return { kind: "rangeNotSatisfiable", item };

    // payment-identifier: the same id with the same payload is this very request again (the
    // ledger answers it as the same proof); with another payload it is refused before any charge.
    const paymentId = readPaymentIdentifier(proof.raw);
    if (paymentId && !paymentId.ok) return refuse(item, proof, paymentId.reason, paymentId.message);
    const payloadHash = paymentId?.ok ? paymentPayloadHash(proof.raw) : "";
    if (paymentId?.ok) {
      const seen = await deps.paymentIdentifiers.remember(
        paymentId.id,
        payloadHash,
        new Date(now() * 1000).toISOString(),
      );
      if (seen.kind === "conflict") {
        return {
          kind: "conflict",
          reason: Reason.paymentIdentifierConflict,
          message: "this payment id was used with another payment",
        };
      }
    }

    // One purchase per buyer and file at a time: another authorization from the same buyer waits,
    // and is served on the entitlement the first one granted instead of paying twice. (The same
    // proof again is not held here: the settler joins it to the settlement already running.)
    const key = `${proof.from}|${item.cid}`;
    for (;;) {
      for (let running = buying.get(key); running && running.nonce !== proof.nonce; running = buying.get(key)) {
        await running.done;
        const owned = checkedLocally(proof) ? await activeFor(proof.from, item) : undefined;
        if (owned) return serveEntitled(item, proof.x402Version, proof.from, owned, range);
      }
      // An earlier authorization of this buyer for this file whose settlement is unconfirmed: the
      // chain says first whether it paid, and this one is charged only once it can no longer have.
      const held = await deps.payments.heldFor(proof.from, item.cid);
      if (held && held.nonce !== proof.nonce) {
        const earlier = await deps.settler.confirmHeld(held, accessOf(item));
        if (earlier?.kind === "paid") {
          const granted = earlier.entitlement && { ...earlier.entitlement, paymentId: earlier.payment.id };
          return serve(item, proof.x402Version, proof.from, earlier.payment, range, granted);
        }
        if (earlier?.kind !== "refused") {
          return { kind: "pending", message: "an earlier payment of yours for this file is not confirmed yet" };
        }
      }
      // The awaits above let another authorization of this buyer's start meanwhile: it goes first, as above.
      const running = buying.get(key);
      if (!running || running.nonce === proof.nonce) break;
    }
    // Past the limit of refused proofs for this client or payer: answered here, the facilitator never asked.
    const reserved = deps.verifyLimiter?.reserve(request.client, proof.from);
    if (reserved && !reserved.ok) {
      if (paymentId?.ok) await deps.paymentIdentifiers.release(paymentId.id, payloadHash);
      return { kind: "tooManyFailures", retryAfterSeconds: reserved.retryAfterSeconds };
    }
    const paying = deps.settler.pay(attemptOf(item, requirement, proof));
    const mine = { nonce: proof.nonce, done: paying.catch(() => undefined) };
    if (!buying.has(key)) buying.set(key, mine);
    let outcome: Outcome | undefined;
    try {
      outcome = await paying;
    } finally {
      if (buying.get(key) === mine) buying.delete(key);
      // A refusal by the facilitator counts against the window; anything else gives the slot back.
      reserved?.slot.done(outcome?.kind === "refused" && !outcome.held);
    }
    if (paymentId?.ok) {
      // The id names the payment this request made (an `existing` row may be another proof's); an
      // attempt whose authorization was released moved no money, so its id is free again.
      const released =
        (outcome.kind === "refused" && !outcome.held) || (outcome.kind === "unavailable" && outcome.released);
      if (outcome.kind === "paid") await deps.paymentIdentifiers.attach(paymentId.id, outcome.payment.id);
      else if (released) await deps.paymentIdentifiers.release(paymentId.id, payloadHash);
    }
    switch (outcome.kind) {
      case "paid":
        return serve(
          item,
          proof.x402Version,
          proof.from,
          outcome.payment,
          range,
          outcome.entitlement && { ...outcome.entitlement, paymentId: outcome.payment.id },
          outcome.timings,
        );
      case "existing":
        return existing(item, proof, outcome.payment, range);
      case "refused":
        return refuse(item, proof, outcome.reason, outcome.message);
      case "unavailable":
      case "pending":
        return outcome;
    }
  }

  return { decide };
}

export type Purchase = ReturnType<typeof createPurchase>;
