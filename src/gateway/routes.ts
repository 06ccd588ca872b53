/**
 * GET|HEAD /x402/cid/:cid, the HTTP adapter over the purchase decision
 * (purchase.ts): headers in, a decision out, a Response back. Nothing here
 * decides whether anyone paid; it only picks status, headers and body, and
 * keeps the 402 and 403 answers prebuilt per offer (the 402 is the hot path).
 * See docs/gateway.md "The request, step by step".
 */
import { type DocumentDecoration, Elysia } from "elysia";
import { ACCESS_COOKIE, ACCESS_TOKEN_HEADER } from "../entitlements/access-token";
import { errorBody } from "../http/errors";
import { prefersHtml } from "../paywall/accept";
import { SIWX_HEADER } from "../x402/extensions";
import { encodeHeader, Header } from "../x402/headers";
import type { PricedContent } from "./catalog";
import type { Decision, OfferExtensions, Purchase } from "./purchase";
import { receiptHeader } from "./receipts";
import { rejectionPayload } from "./requirements";

/** What the gateway's routes need: the decision core, built by the composition root. */
export interface GatewayDeps {
  purchase: Purchase;
  /** PUBLIC_URL is https: access cookies are marked Secure. */
  secureCookies: boolean;
  /** Names a request's client (TRUST_PROXY aware, http/client-address.ts); none: unknown. */
  clientAddress?: (request: Request) => string | undefined;
  /** The browser's side (src/paywall/): an HTML 402 for navigations, the served file's name. */
  pages?: GatewayPages;
}

/** What the gateway asks of the paywall; each answer is cached there per offer. */
export interface GatewayPages {
  offerPage(item: PricedContent): Uint8Array<ArrayBuffer>;
  disposition(item: PricedContent): string;
  /** Extra headers of the HTML 402 (its Content-Security-Policy). */
  headers: Record<string, string>;
}

/** Browsers may send the proof headers and read the payment headers only if CORS says so. */
export const CORS_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers":
    "PAYMENT-REQUIRED, X-PAYMENT-RESPONSE, PAYMENT-RESPONSE, X-Access-Token, Content-Length, Content-Range, Accept-Ranges, ETag",
} as const;

export const PREFLIGHT_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS",
  // x402-fetch and @x402/fetch also send Access-Control-Expose-Headers as a request header.
  "Access-Control-Allow-Headers":
    "X-PAYMENT, PAYMENT-SIGNATURE, SIGN-IN-WITH-X, Authorization, Range, If-None-Match, Content-Type, Access-Control-Expose-Headers",
  "Access-Control-Max-Age": "86400",
} as const;

function json(status: number, body: string, head: boolean, extra?: Record<string, string>): Response {
  return new Response(head ? null : body, {
    status,
    headers: { "Content-Type": "application/json", ...CORS_HEADERS, ...extra },
  });
}

/** Error bodies by message, built once: a 404 is as hot as a 402. */
const errorBodies = new Map<string, string>();
function errorJson(code: string, message: string): string {
  const key = `${code}|${message}`;
  let body = errorBodies.get(key);
  if (body === undefined) {
    body = JSON.stringify(errorBody(code, message));
    if (errorBodies.size < 256) errorBodies.set(key, body);
  }
  return body;
}

/**
 * Headers of the 402 of each offer, built once per offer and extensions
 * object (the sign-in challenge's nonce moves once a minute): the 402 is the
 * hot path.
 */
// Kept as Headers objects: Bun copies a Headers into a new Response in ~0.2 us, a plain object
// of the same five headers in ~0.8 us (the Response gets its own copy either way).
const paymentRequiredHeaders = new WeakMap<
  PricedContent["required"],
  { extensions: OfferExtensions; headers: Headers; html?: Headers }
>();

/**
 * The 402. A browser navigating (Accept prefers text/html) gets the paywall
 * page with the same PAYMENT-REQUIRED header and CORS; anyone else exactly the JSON 402.
 */
function paymentRequired(
  d: Extract<Decision, { kind: "offer" }>,
  head: boolean,
  requestHeaders: Headers,
  pages: GatewayPages | undefined,
): Response {
  const { item, extensions } = d;
  let cached = paymentRequiredHeaders.get(item.required);
  if (cached?.extensions !== extensions) {
    const header = encodeHeader({ ...item.required.v2, extensions });
    cached = {
      extensions,
      headers: new Headers({
        "Content-Type": "application/json",
        ...CORS_HEADERS,
        [Header.paymentRequired]: header,
        "Cache-Control": "no-store",
      }),
    };
    paymentRequiredHeaders.set(item.required, cached);
  }
  if (pages && prefersHtml(requestHeaders.get("accept"))) {
    if (!cached.html) {
      cached.html = new Headers(cached.headers);
      for (const [name, value] of Object.entries(pages.headers)) cached.html.set(name, value);
      cached.html.set("Content-Type", "text/html; charset=utf-8");
    }
    return new Response(head ? null : pages.offerPage(item), { status: 402, headers: cached.html });
  }
  return new Response(head ? null : item.required.body, { status: 402, headers: cached.headers });
}

/** 403 bodies per offer and reason, built once: rejecting a forged proof should cost next to nothing. */
const refusals = new WeakMap<PricedContent["required"], Map<string, { body: string; headers: Headers }>>();

function refused(d: Extract<Decision, { kind: "refuse" }>, head: boolean): Response {
  const { item } = d;
  let byReason = refusals.get(item.required);
  if (!byReason) refusals.set(item.required, (byReason = new Map()));
  const key = `${d.x402Version}|${d.reason}|${d.message}`;
  let cached = byReason.get(key);
  if (!cached) {
    const { body, header } = rejectionPayload(item.required, d.x402Version, d.reason, d.message);
    cached = {
      body: JSON.stringify(body),
      headers: new Headers({
        "Content-Type": "application/json",
        ...CORS_HEADERS,
        [Header.paymentRequired]: header,
        "Cache-Control": "no-store",
      }),
    };
    // Reasons come from a small fixed set (ours and the facilitator's); bound it anyway.
    if (byReason.size < 256) byReason.set(key, cached);
  }
  return new Response(head ? null : cached.body, { status: 403, headers: cached.headers });
}

/**
 * The paid file, streamed from the handle the decision opened and checked
 * (content/file-handle.ts: a file deleted or renamed over while the payment
 * settled still sends the bytes paid for); never read into memory whole.
 */
function fileResponse(
  d: Extract<Decision, { kind: "serve" }>,
  head: boolean,
  path: string,
  secure: boolean,
  pages: GatewayPages | undefined,
): Response {
  const { item, range } = d;
  const { file } = item;
  const opened = d.file;
  if (!opened) return respond(FILE_CHANGED_LATE, head, path, secure, new Headers(), pages); // every serve carries one; never the path
  if (head) void opened.close();
  const headers: Record<string, string> = {
    ...CORS_HEADERS,
    "Content-Type": file.mediaType,
    // Its real name: a browser saves (or shows) the file as the creator named it.
    ...(pages ? { "Content-Disposition": pages.disposition(item) } : {}),
    // A CID names these exact bytes: the strongest validator there is.
    ETag: `"${item.cid}"`,
    "Accept-Ranges": "bytes",
    "Cache-Control": "private, no-store",
  };
  if (d.receipt) {
    const [name, value] = receiptHeader(d.x402Version, d.receipt);
    headers[name] = value;
  }
  if (d.access) {
    // Bound to this CID's path: the cookie goes back only with requests for this file.
    const maxAge = Math.max(0, d.access.expiresAt - Math.floor(Date.now() / 1000));
    headers[ACCESS_TOKEN_HEADER] = d.access.token;
    headers["Set-Cookie"] =
      `${ACCESS_COOKIE}=${d.access.token}; Path=${path}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`;
  }
  if (d.timings)
    headers["Server-Timing"] =
      `verify;dur=${d.timings.verifyMs.toFixed(2)}, settle;dur=${d.timings.settleMs.toFixed(2)}`;
  if (range) {
    headers["Content-Range"] = `bytes ${range.start}-${range.end}/${file.size}`;
    headers["Content-Length"] = String(range.end - range.start + 1);
    return new Response(head ? null : opened.body(range), { status: 206, headers });
  }
  headers["Content-Length"] = String(file.size);
  return new Response(head ? null : opened.body(), { status: 200, headers });
}

/**
 * The access tokens a request carries: `Authorization: Bearer` (scripts) and
 * the cookie (browsers). Both are tried: a stale bearer must not hide a
 * good cookie.
 */
function accessTokensOf(headers: Headers): string[] | undefined {
  const authorization = headers.get("authorization");
  const cookie = headers.get("cookie");
  if (authorization === null && cookie === null) return undefined;
  const tokens: string[] = [];
  if (authorization?.startsWith("Bearer ")) tokens.push(authorization.slice(7).trim());
  const fromCookie = cookie === null ? undefined : new Bun.CookieMap(cookie).get(ACCESS_COOKIE);
  if (fromCookie) tokens.push(fromCookie);
  return tokens.length > 0 ? tokens : undefined;
}

/** The 429 body, built once: a flood past the limit is answered at the cost of a map lookup. */
const TOO_MANY_FAILURES = JSON.stringify(
  errorBody(
    "too_many_failed_payments",
    "too many payment proofs from this client or payer were refused by the facilitator; try again later",
  ),
);

const FILE_CHANGED_LATE: Decision = { kind: "fileChanged", message: "the file could not be opened" };

/** The one mapping from a decision to what the client receives. */
function respond(
  d: Decision,
  head: boolean,
  path: string,
  secure: boolean,
  request: Headers,
  pages: GatewayPages | undefined,
): Response {
  switch (d.kind) {
    case "offer":
      return paymentRequired(d, head, request, pages);
    case "refuse":
      return refused(d, head);
    case "serve":
      return fileResponse(d, head, path, secure, pages);
    case "notFound":
      return json(404, errorJson("not_found", d.message), head);
    case "conflict":
      return json(409, JSON.stringify(errorBody(d.reason, d.message)), head);
    case "rangeNotSatisfiable":
      return new Response(null, {
        status: 416,
        headers: { ...CORS_HEADERS, "Content-Range": `bytes */${d.item.file.size}` },
      });
    case "unavailable":
      // The chain contradicts the facilitator: a bad gateway, named so, and nothing served.
      if (d.code === "facilitator_untrusted")
        return json(502, JSON.stringify(errorBody(d.code, `${d.message}; nothing was served`)), head);
      return json(
        500,
        JSON.stringify(
          errorBody(
            "facilitator_unavailable",
            `the payment could not be completed: ${d.message}; present the same proof again later`,
          ),
        ),
        head,
      );
    case "fileChanged":
      // Paid, and the bytes paid for cannot be sent now: the entitlement stands; the same proof, a
      // sign-in or the access token gets the file once it is back under this CID.
      return json(
        503,
        JSON.stringify(errorBody("file_changed", `${d.message}; present the same proof again shortly`)),
        head,
        { "Retry-After": "5" },
      );
    case "tooManyFailures":
      return json(429, TOO_MANY_FAILURES, head, { "Retry-After": String(d.retryAfterSeconds) });
    case "pending":
      // Not a refusal: the same proof, presented again once the transaction is mined, is served.
      return json(
        503,
        JSON.stringify(errorBody("settlement_pending", `${d.message}; present the same proof again shortly`)),
        head,
        { "Retry-After": "5" },
      );
  }
}

/** Reads the request into the purchase's terms and answers its decision; synchronous up to the 402. */
export function createGatewayHandler({ purchase, secureCookies, clientAddress, pages }: GatewayDeps) {
  return function handle(request: Request, cid: string, head: boolean): Response | Promise<Response> {
    const headers = request.headers;
    const paymentSignature = headers.get("payment-signature");
    const xPayment = headers.get("x-payment");
    const decision = purchase.decide({
      cid,
      credentials: {
        paymentSignature,
        xPayment,
        accessTokens: accessTokensOf(headers),
        signIn: headers.get(SIWX_HEADER),
      },
      charge: !head,
      range: headers.get("range"),
      // Asked only when a proof is presented: the 402 path stays as it was.
      client: paymentSignature !== null || xPayment !== null ? clientAddress?.(request) : undefined,
    });
    const path = `/x402/cid/${cid}`;
    return decision instanceof Promise
      ? decision.then((d) => respond(d, head, path, secureCookies, headers, pages))
      : respond(decision, head, path, secureCookies, headers, pages);
  };
}

export type GatewayHandler = ReturnType<typeof createGatewayHandler>;

const preflight = () => new Response(null, { status: 204, headers: PREFLIGHT_HEADERS });

/**
 * OpenAPI for the paid route. `security: []`: no bearer token; what pays is an
 * x402 proof in a header (X-PAYMENT, PAYMENT-SIGNATURE), which OpenAPI has no
 * scheme for. Cast as in auth.ts (elysia types `detail` from `openapi-types`).
 */
function gatewayDetail(method: "GET" | "HEAD") {
  const text = (description: string) => ({ description });
  return {
    tags: ["gateway"],
    summary:
      method === "GET"
        ? "Buy and download a file by its CID (x402: 402 with the price, then pay with X-PAYMENT or PAYMENT-SIGNATURE)"
        : "The price of a file (402), or whether a proof or access token already covers it; never charges",
    security: [],
    responses: {
      200: text("the file (paid, entitled, or free again under the same proof)"),
      ...(method === "GET" && { 206: text("a byte range of the file (Range)") }),
      402: text("payment required: the x402 v1 body, the v2 PAYMENT-REQUIRED header"),
      403: text("the proof was refused; the body names the x402 reason"),
      404: text("no such CID for sale"),
      ...(method === "GET" && {
        409: text("a payment-identifier reused with another payment"),
        416: text("the range is outside the file"),
      }),
      500: text("the payment could not be completed (the facilitator was unreachable); the body says more"),
      503: text("the payment is settling; retry after Retry-After"),
    },
  } as unknown as DocumentDecoration;
}

/** The gateway as an Elysia module: what `app.handle` reaches (and paths Bun's router does not match exactly). */
export function gatewayModule(handle: GatewayHandler) {
  return new Elysia({ name: "gateway", prefix: "/x402" })
    .get("/cid/:cid", ({ request, params }) => handle(request, params.cid, false), { detail: gatewayDetail("GET") })
    .head("/cid/:cid", ({ request, params }) => handle(request, params.cid, true), { detail: gatewayDetail("HEAD") })
    .options("/cid/:cid", preflight);
}

type Handler = (request: Request) => Response | Promise<Response>;

/**
 * The same routes for Bun.serve's `routes` (no Elysia in between: ~2 us less
 * per 402). `wrap` is the server's per-request wrapper (the request log).
 */
export function gatewayRoutes(
  handle: GatewayHandler,
  wrap: (handler: Handler, pathOf: (request: Request) => string) => Handler,
) {
  type Routed = Request & { params: { cid: string } };
  // The router has the path in pieces already; rebuilding it is cheaper than reading request.url.
  const pathOf = (request: Request) => `/x402/cid/${(request as Routed).params.cid}`;
  return {
    "/x402/cid/:cid": {
      GET: wrap((request) => handle(request, (request as Routed).params.cid, false), pathOf),
      HEAD: wrap((request) => handle(request, (request as Routed).params.cid, true), pathOf),
      OPTIONS: wrap(preflight, pathOf),
    },
  };
}
