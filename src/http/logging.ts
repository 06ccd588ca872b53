/**
 * One structured line per request: method, path (no query string), status,
 * duration, request id. Headers are never logged, so tokens and payment
 * proofs cannot reach the log.
 */
import { Elysia } from "elysia";
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

export function requestLogging(log: Logger) {
  return new Elysia({ name: "request-logging" })
    .derive({ as: "global" }, ({ request, set }) => {
      const requestId = request.headers.get("x-request-id")?.slice(0, 64) || crypto.randomUUID();
      set.headers["x-request-id"] = requestId;
      return { requestId, startedAt: performance.now() };
    })
    .onAfterResponse({ as: "global" }, ({ request, set, requestId, startedAt, path }) => {
      const status = typeof set.status === "number" ? set.status : 200;
      log.info({
        method: request.method,
        path,
        status,
        ms: Math.round((performance.now() - (startedAt ?? performance.now())) * 100) / 100,
        requestId,
      });
    });
}
