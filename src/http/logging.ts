/**
 * One structured line per request: method, path (no query string), status,
 * duration, request id. Headers are never logged, so tokens and payment
 * proofs cannot reach the log.
 */
import { Elysia, StatusMap } from "elysia";
import pino from "pino";

export function createLogger(level = "info") {
  return pino({
    level,
    base: undefined,
    // Belt and braces: if anything ever logs headers, these never appear.
    redact: ["req.headers.authorization", "req.headers['x-payment']", "req.headers['payment-signature']", "*.signature"],
  });
}

export type Logger = ReturnType<typeof createLogger>;

/**
 * The status that went out. A handler or error hook that returns a Response
 * (e.g. a 404 in the error shape) does not touch `set.status`, so read the
 * Response itself first.
 */
function responseStatus(ctx: { responseValue?: unknown; response?: unknown }, setStatus: unknown): number {
  const sent = ctx.responseValue ?? ctx.response;
  if (sent instanceof Response) return sent.status;
  if (typeof setStatus === "number") return setStatus;
  // `set.status` may be a name ("Not Found") when set through Elysia's status map.
  const named = typeof setStatus === "string" ? (StatusMap as Record<string, number>)[setStatus] : undefined;
  return named ?? 200;
}

/** Per-request facts, keyed by the Request so they exist even for unrouted requests (404s). */
const started = new WeakMap<Request, { requestId: string; startedAt: number }>();

export function requestLogging(log: Logger) {
  return new Elysia({ name: "request-logging" })
    .onRequest(({ request, set }) => {
      // A caller's id is kept only when it is short and plain, so it cannot smuggle anything into logs.
      const given = request.headers.get("x-request-id");
      const requestId = given && /^[\w.:-]{1,64}$/.test(given) ? given : crypto.randomUUID();
      set.headers["x-request-id"] = requestId;
      started.set(request, { requestId, startedAt: performance.now() });
    })
    // Handlers that log something of their own can tie it to the request line.
    .derive({ as: "global" }, ({ request }) => ({ requestId: started.get(request)?.requestId ?? "" }))
    .onAfterResponse({ as: "global" }, (ctx) => {
      const { request, set } = ctx;
      const facts = started.get(request);
      const status = responseStatus(ctx as { responseValue?: unknown; response?: unknown }, set.status);
      log.info({
        method: request.method,
        // The path only: a query string could carry a token or a proof.
        path: ctx.path,
        status,
        ms: facts ? Math.round((performance.now() - facts.startedAt) * 100) / 100 : undefined,
        requestId: facts?.requestId,
      });
    });
}
