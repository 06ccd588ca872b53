/**
 * One structured line per request: method, path (no query string), status,
 * duration, request id. Headers are never logged, so tokens and payment
 * proofs cannot reach the log.
 *
 * The line is written by a wrapper around the app's fetch at the server
 * boundary (`Bun.serve({ fetch: withRequestLog(app.fetch, log) })`), not by
 * Elysia hooks: global onRequest/derive/onAfterResponse hooks made every
 * route's compiled handler heavier and cost ~10 us per request, more than
 * the gateway's whole 402. The wrapper sees every answer, routed or not
 * (404s, 413s, errors), and costs ~2 us.
 */
import pino from "pino";
import { errorResponse } from "./errors";
import { logFailure } from "./log-paths";

/** Where each logger writes: the request line is written there directly, already serialized. */
const destinations = new WeakMap<object, pino.DestinationStream>();

/**
 * `destination` defaults to stdout, written synchronously: measured cheaper
 * per line than pino's asynchronous destination (~1.5 us vs ~1.9 us, to
 * /dev/null and to a file alike), and nothing is lost at exit. Tests pass a
 * stream to read the lines.
 */
export function createLogger(
  level = "info",
  destination: pino.DestinationStream = pino.destination({ dest: 1, sync: true }),
) {
  const log = pino(
    {
      level,
      base: undefined,
      // Belt and braces: if anything ever logs headers, these never appear.
      redact: [
        "req.headers.authorization",
        "req.headers['x-payment']",
        "req.headers['payment-signature']",
        "*.signature",
      ],
    },
    destination,
  );
  destinations.set(log, destination);
  return log;
}

export type Logger = ReturnType<typeof createLogger>;

export type FetchHandler = (request: Request) => Response | Promise<Response>;

// A caller's id is kept only when it is short and plain, so it cannot smuggle anything into logs.
const PLAIN_ID = /^[\w.:-]{1,64}$/;

/** The path of a request URL without parsing it: a query string could carry a token or a proof. */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const query = url.indexOf("?", start);
  return query < 0 ? url.slice(start) : url.slice(start, query);
}

/*
 * Request lines are gathered and written once per event-loop turn (or every
 * 64 KiB): a busy server answers many requests per turn, and one write(2)
 * per line cost ~1.5 us of each 402 (measured: 11.0-11.2 us per 402 against
 * 9.4-9.9 us batched, to /dev/null). Lines wait at most until the turn ends,
 * and whatever is gathered is written at exit.
 */
const pendingFlushes = new Set<() => void>();
let exitHooked = false;
// One buffer per destination, however many wrappers write to it: lines keep their order.
const writers = new WeakMap<pino.DestinationStream, (line: string) => void>();

function batched(destination: pino.DestinationStream): (line: string) => void {
  let writer = writers.get(destination);
  if (!writer) writers.set(destination, (writer = batchedWriter(destination)));
  return writer;
}

function batchedWriter(destination: pino.DestinationStream): (line: string) => void {
  let buffer = "";
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    pendingFlushes.delete(flush);
    if (buffer === "") return;
    const out = buffer;
    buffer = "";
    destination.write(out);
  };
  if (!exitHooked) {
    exitHooked = true;
    process.on("exit", () => {
      for (const f of [...pendingFlushes]) f();
    });
  }
  return (line) => {
    buffer += line;
    if (buffer.length >= 65_536) return flush();
    if (!scheduled) {
      scheduled = true;
      pendingFlushes.add(flush);
      setImmediate(flush);
    }
  };
}

const INFO = 30; // pino's level number for info
const PLAIN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/**
 * Wraps a fetch handler (an Elysia app's `fetch`, or `app.handle` in tests)
 * so each request gets an X-Request-Id (the caller's, when plain, else a
 * UUID) and one log line once its answer is ready.
 *
 * The line is the one pino would write for `log.info({method, path, status,
 * ms, requestId})`, serialized here by hand: pino's generic path (with its
 * redaction, which has nothing to redact in these five fields) cost ~1 us of
 * the ~1.5 us per line. No async function either: a synchronous answer is
 * finished synchronously, a promised one with one `then`.
 */
export function withRequestLog(
  fetch: FetchHandler,
  log: Logger,
  /** The logged path when the router already knows it: reading `request.url` costs ~0.6 us. */
  pathOfRequest: (request: Request) => string = (request) => pathOf(request.url),
  /** Told each answer's status (the /metrics request counts, src/stats/observe.ts): here, not in a wrapper of its own, as a wrapper cost ~0.3 us per 402. */
  count?: (status: number, request: Request) => void,
): (request: Request) => Response | Promise<Response> {
  const destination = destinations.get(log);
  const write = destination ? batched(destination) : undefined;

  function finish(response: Response, request: Request, requestId: string, startedAt: number): Response {
    try {
      response.headers.set("x-request-id", requestId);
    } catch {
      // Immutable headers (a Response passed through from fetch()): the log line still has the id.
    }
    if (count !== undefined) count(response.status, request);
    if (log.levelVal > INFO) return response;
    const ms = Math.round((performance.now() - startedAt) * 100) / 100;
    const method = request.method;
    const path = pathOfRequest(request);
    if (!write) {
      log.info({ method, path, status: response.status, ms, requestId });
      return response;
    }
    // The id is plain by construction (checked, or a UUID); the method is quoted as is when it is a usual one.
    const m = PLAIN_METHODS.has(method) ? `"${method}"` : JSON.stringify(method);
    write(
      `{"level":30,"time":${Date.now()},"method":${m},"path":${JSON.stringify(path)},"status":${response.status},"ms":${ms},"requestId":"${requestId}"}\n`,
    );
    return response;
  }

  function unhandled(requestId: string, e: unknown): Response {
    // The errors plugin answers errors itself; this is the backstop, never Bun's own error page.
    logFailure(log, "error", { requestId }, "unhandled error", e);
    return errorResponse(500, "internal_error", "internal error");
  }

  return function loggedFetch(request: Request): Response | Promise<Response> {
    const startedAt = performance.now();
    const given = request.headers.get("x-request-id");
    const requestId = given !== null && PLAIN_ID.test(given) ? given : crypto.randomUUID();
    let answer: Response | Promise<Response>;
    try {
      answer = fetch(request);
    } catch (e) {
      return finish(unhandled(requestId, e), request, requestId, startedAt);
    }
    if (!(answer instanceof Promise)) return finish(answer, request, requestId, startedAt);
    return answer.then(
      (response) => finish(response, request, requestId, startedAt),
      (e) => finish(unhandled(requestId, e), request, requestId, startedAt),
    );
  };
}
