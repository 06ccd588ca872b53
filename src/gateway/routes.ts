/**
 * GET|HEAD /x402/cid/:cid, the HTTP adapter over the purchase decision
 * (purchase.ts): headers in, a decision out, a Response back. Nothing here
 * decides whether anyone paid; it only picks status, headers and body, and
 * keeps the 402 and 403 answers prebuilt per offer (the 402 is the hot path).
 * See docs/gateway.md "The request, step by step".
 */
import { Elysia } from "elysia";
import { ACCESS_COOKIE, ACCESS_TOKEN_HEADER } from "../entitlements/access-token";
import { errorBody } from "../http/errors";
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
  { extensions: OfferExtensions; headers: Headers }
>();

function paymentRequired(d: Extract<Decision, { kind: "offer" }>, head: boolean): Response {
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

/** The paid file, streamed from disk (Bun sends it with sendfile; never read into memory). */
function fileResponse(d: Extract<Decision, { kind: "serve" }>, head: boolean, path: string, secure: boolean): Response {
  const { item, range } = d;
  const { file } = item;
  const headers: Record<string, string> = {
    ...CORS_HEADERS,
    "Content-Type": file.mediaType,
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
  const blob = Bun.file(file.absolutePath, { type: file.mediaType });
  if (range) {
    headers["Content-Range"] = `bytes ${range.start}-${range.end}/${file.size}`;
    headers["Content-Length"] = String(range.end - range.start + 1);
    return new Response(head ? null : blob.slice(range.start, range.end + 1), { status: 206, headers });
  }
  headers["Content-Length"] = String(file.size);
  return new Response(head ? null : blob, { status: 200, headers });
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

/** The one mapping from a decision to what the client receives. */
function respond(d: Decision, head: boolean, path: string, secure: boolean): Response {
  switch (d.kind) {
    case "offer":
      return paymentRequired(d, head);
    case "refuse":
      return refused(d, head);
    case "serve":
      return fileResponse(d, head, path, secure);
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
export function createGatewayHandler({ purchase, secureCookies }: GatewayDeps) {
  return function handle(request: Request, cid: string, head: boolean): Response | Promise<Response> {
    const headers = request.headers;
    const decision = purchase.decide({
      cid,
      credentials: {
        paymentSignature: headers.get("payment-signature"),
        xPayment: headers.get("x-payment"),
        accessTokens: accessTokensOf(headers),
        signIn: headers.get(SIWX_HEADER),
      },
      charge: !head,
      range: headers.get("range"),
    });
    const path = `/x402/cid/${cid}`;
    return decision instanceof Promise
      ? decision.then((d) => respond(d, head, path, secureCookies))
      : respond(decision, head, path, secureCookies);
  };
}

export type GatewayHandler = ReturnType<typeof createGatewayHandler>;

const preflight = () => new Response(null, { status: 204, headers: PREFLIGHT_HEADERS });

/** The gateway as an Elysia module: what `app.handle` reaches (and paths Bun's router does not match exactly). */
export function gatewayModule(handle: GatewayHandler) {
  return new Elysia({ name: "gateway", prefix: "/x402" })
    .get("/cid/:cid", ({ request, params }) => handle(request, params.cid, false))
    .head("/cid/:cid", ({ request, params }) => handle(request, params.cid, true))
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
