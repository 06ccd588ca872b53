/**
 * The one server factory: `npm start` (index.ts), `cidgate serve`, the
 * benchmarks and the end-to-end tests all run cidgate through it, so every
 * paid-path test runs the production routes, limits and request log.
 *
 * Bun.serve with the gateway's routes on Bun's own router (the 402 path is
 * the hot one) and everything else through the Elysia app, both behind the
 * request-log wrapper (one line per request, X-Request-Id).
 */
import { composeApp } from "./app";
import type { Db } from "./db/client";
import { type Database, isPg, openDatabase } from "./db/database";
import { createFacilitator } from "./facilitator/create";
import type { Facilitator } from "./facilitator/types";
import { gatewayRoutes } from "./gateway/routes";
import { clientAddressOf } from "./http/client-address";
import { describeError, errorResponse } from "./http/errors";
import { publicUrlCheck } from "./http/forwarded";
import { resolveJwtSecret } from "./http/jwt-secret";
import { createLogger, type Logger, withRequestLog } from "./http/logging";
import { hasRpc } from "./ledger/chain-lookup";
import { startPruning } from "./ledger/prune";
import { createDispatcher, type DispatcherOptions } from "./notifications/dispatcher";
import { reportReloadFailures } from "./notifications/hooks";
import { preparePricing } from "./pricing/boot";
import { startWatchers } from "./pricing/watch";
import type { Settings } from "./settings";
import { drainRequests } from "./shutdown";
import { requestCounter } from "./stats/observe";
import { createStores, type Stores } from "./stores";

export interface ServerOptions {
  settings: Settings;
  /** Default: CIDGATE_DB opened and migrated. A PostgreSQL one comes with its `stores` and `contentDb`. */
  db?: Database;
  /** The content index's database: default `db` (SQLite); beside a PostgreSQL `db`, the replica's local file. */
  contentDb?: Db;
  /** Default: LOG_LEVEL on stdout. */
  log?: Logger;
  /** Default: JWT_SECRET, or the one generated once into the data folder (0600). */
  jwtSecret?: string;
  /** Default: FACILITATOR_URL's (the in-process one for `local`). */
  facilitator?: Facilitator;
  /** Default: made over `db`. Give them when the caller writes through them too (tests, benches). */
  stores?: Stores;
  /**
   * Index content/ and reconcile config/ before the first request (so the
   * first answer is already right), then watch both. Default true; tests
   * that price through the API alone turn it off.
   */
  pricing?: boolean;
  /**
   * How long `stop()` waits for requests in flight (settlements among them)
   * before closing connections. Default: two facilitator calls
   * (verify + settle, each bounded by FACILITATOR_TIMEOUT_MS) and a second,
   * so a settlement that started before the signal finishes.
   */
  shutdownGraceMs?: number;
  /** The webhook dispatcher's timing (tests shorten the retry schedule); default: dispatcher.ts's. */
  webhooks?: Pick<DispatcherOptions, "scheduleMs" | "pollMs" | "timeoutMs">;
  /**
   * Resolve pending payments from the chain at start and every RECONCILE_SECONDS
   * (ledger/reconcile.ts). Default true; tests that inspect pending rows turn it off.
   */
  reconcile?: boolean;
}

/**
 * The JSON body check answers 413 itself at 1 MiB in the error shape; Bun's
 * own limit (an empty 413) is only the backstop for bodies that never reach it.
 */
const BACKSTOP_BODY_LIMIT = 16 * 1024 * 1024;

type Fetch = (request: Request) => Response | Promise<Response>;

/**
 * Elysia finds a request's path at the first "/" after index 11 (it assumes
 * an origin at least as long as `http://a.bc`): behind a short Host header
 * (`Host: a`) every management route answered 404, and `Host: x` served
 * `/x402/v3/x402/config` as `/v3/x402/config`. Such a request is handed on
 * under a long enough origin; nothing reads the origin (public URLs come
 * from PUBLIC_URL), and every usual request goes through untouched.
 */
function withRoutableOrigin(fetch: Fetch): Fetch {
  return (request) => {
    const url = request.url;
    const pathStart = url.indexOf("/", url.indexOf("//") + 2);
    if (pathStart >= 11) return fetch(request);
    return fetch(new Request(`http://localhost${pathStart === -1 ? "/" : url.slice(pathStart)}`, request));
  };
}

export async function startServer(options: ServerOptions) {
  const { settings } = options;
  const log = options.log ?? createLogger(settings.logLevel);
  const warn = (message: string) => log.warn(message);
  // The database given (tests, benches) stays the caller's to close; one opened here closes at stop.
  const opened = options.db ? undefined : await openDatabase(settings, { warn });
  const db: Database = options.db ?? opened!.db;
  const given = options.db;
  if (given && isPg(given) && !(options.stores && options.contentDb))
    throw new Error("startServer: a PostgreSQL db comes with its stores and contentDb (createPgStores)");
  const contentDb: Db = options.contentDb ?? (given ? (given as Db) : opened!.contentDb);
  const jwtSecret = options.jwtSecret ?? resolveJwtSecret(settings, warn);
  const facilitator = options.facilitator ?? createFacilitator(settings, log);
  // One set of stores (and one catalog change signal) shared by pricing, the gateway and the API.
  const stores = options.stores ?? opened?.stores ?? createStores(given as Db, settings);
  const prepared = options.pricing === false ? undefined : await preparePricing({ ...stores, settings, log });
  // A rejected reload (this start's included) queues `config.reload_failed`.
  const pricing = prepared && reportReloadFailures(prepared, stores.notifications, settings.configDir);
  // The outbox is sent beside the server, never on a request's path; what is queued from before a restart goes first.
  const dispatcher = createDispatcher({ store: stores.notifications, log, ...options.webhooks });

  // What escapes every handler (a file that vanished while Bun streamed it, say) still gets the one
  // JSON error shape, never Bun's plain-text "Something went wrong!"; the log line names no path.
  const lastResort = (error: Error) => {
    log.error({ err: error.name }, "unhandled server error");
    return errorResponse(500, "internal_error", "internal error");
  };

  // Bound before the app is built: with PORT=0 the public URL is known only once the port is.
  const server = Bun.serve({
    port: settings.port,
    hostname: settings.host,
    maxRequestBodySize: BACKSTOP_BODY_LIMIT,
    idleTimeout: 30, // seconds: room for slow clients of large files
    development: false, // never Bun's HTML error page
    fetch: () => new Response(null, { status: 503 }),
    error: lastResort,
  });
  const url = `http://${settings.host.includes(":") ? `[${settings.host}]` : settings.host}:${server.port}`;
  const publicUrl = settings.port === 0 && settings.publicUrl.endsWith(":0") ? url : settings.publicUrl;
  const clientAddress = clientAddressOf(server, settings.trustProxy);
  const { app, gateway, settler, stats, reconciler } = composeApp({
    settings,
    db,
    log,
    jwtSecret,
    facilitator,
    pricing,
    publicUrl,
    stores,
    dispatcher,
    clientAddress,
  });
  const { metrics } = stats;
  // Behind a trusted proxy with an http PUBLIC_URL: warn once if requests come in over https (http/forwarded.ts).
  const checkProto = publicUrlCheck({ trustProxy: settings.trustProxy, publicUrl, log });
  const observed = (handler: Fetch): Fetch =>
    checkProto
      ? (request) => {
          checkProto(request);
          return handler(request);
        }
      : handler;
  server.reload({
    routes: gatewayRoutes(gateway, (handler, path) =>
      withRequestLog(observed(handler), log, path, metrics.requestCounter("/x402/cid/:cid")),
    ),
    fetch: withRequestLog(observed(withRoutableOrigin(app.fetch)), log, undefined, requestCounter(metrics)),
    error: lastResort,
  });
  stats.start();
  const watchers = pricing ? startWatchers({ content: stores.content, settings, pricing, log }) : undefined;
  dispatcher.start();
  const pruning = startPruning({ payments: stores.payments, log });
  if (!hasRpc(settings)) {
    log.warn(
      { facilitator: settings.facilitatorUrl === "local" ? "local" : "remote" },
      "no RPC_URL: settlements are taken on the facilitator's word (nothing is confirmed on chain, pending " +
        "payments are not reconciled in the background; set RPC_URL to let the chain decide)",
    );
  } else if (options.reconcile !== false) reconciler.start();

  let stopped: Promise<void> | undefined;
  return {
    server,
    /** Where this server listens. */
    url,
    /** Where buyers reach it (PUBLIC_URL, or `url`). */
    publicUrl,
    app,
    db,
    contentDb,
    stores,
    log,
    facilitator,
    dispatcher,
    stats,
    /** The background reconciliation (its `runOnce` resolves pending payments now). */
    reconciler,
    /**
     * Stops watching, stops accepting and lets requests in flight finish
     * within the grace (shutdown.ts; or, with `force`, closes them), then
     * checkpoints and closes the database. The facilitator and database given in the options stay the
     * caller's to close.
     */
    stop(force = false): Promise<void> {
      stopped ??= (async () => {
        await watchers?.close();
        pruning.stop();
        const graceMs = options.shutdownGraceMs ?? 2 * settings.facilitatorTimeoutMs + 1000;
        // Together: the listener closes at once while the reconciler finishes the row it holds (one bounded
        // chain read); one after the other, new requests were accepted for up to FACILITATOR_TIMEOUT_MS.
        const [drained] = await Promise.all([
          drainRequests(server, { force, graceMs, settler, log }),
          reconciler.stop(),
        ]);
        if (!drained) await server.stop(true);
        // After the last request: the offers and proofs counted since the last flush are written.
        // A database gone by now (PostgreSQL down) loses the counts since the last flush, nothing else:
        // the outbox and the connections are still closed.
        await Promise.resolve(stats.stop()).catch((e) =>
          log.error({ err: describeError(e) }, "stats: the last flush failed"),
        );
        await dispatcher.stop();
        await opened?.close();
      })();
      return stopped;
    },
  };
}

export type RunningServer = Awaited<ReturnType<typeof startServer>>;
