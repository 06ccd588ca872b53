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
import { type Db, openDb } from "./db/client";
import { createFacilitator } from "./facilitator/create";
import type { Facilitator } from "./facilitator/types";
import { gatewayRoutes } from "./gateway/routes";
import { errorResponse } from "./http/errors";
import { resolveJwtSecret } from "./http/jwt-secret";
import { createLogger, type Logger, withRequestLog } from "./http/logging";
import { hasRpc } from "./ledger/chain-lookup";
import { preparePricing } from "./pricing/boot";
import { startWatchers } from "./pricing/watch";
import type { Settings } from "./settings";
import { createStores, type Stores } from "./stores";

export interface ServerOptions {
  settings: Settings;
  /** Default: CIDGATE_DB opened and migrated. */
  db?: Db;
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
  const db = options.db ?? openDb(settings.db);
  const jwtSecret = options.jwtSecret ?? resolveJwtSecret(settings);
  const facilitator = options.facilitator ?? createFacilitator(settings, log);
  // One set of stores (and one catalog change signal) shared by pricing, the gateway and the API.
  const stores = options.stores ?? createStores(db, settings);
  const pricing = options.pricing === false ? undefined : await preparePricing({ ...stores, settings, log });

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
  const { app, gateway, reconciler } = composeApp({
    settings,
    db,
    log,
    jwtSecret,
    facilitator,
    pricing,
    publicUrl,
    stores,
  });
  server.reload({
    routes: gatewayRoutes(gateway, (handler, path) => withRequestLog(handler, log, path)),
    fetch: withRequestLog(withRoutableOrigin(app.fetch), log),
    error: lastResort,
  });
  const watchers = pricing ? startWatchers({ content: stores.content, settings, pricing, log }) : undefined;
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
    stores,
    log,
    facilitator,
    /** The background reconciliation (its `runOnce` resolves pending payments now). */
    reconciler,
    /**
     * Stops watching, stops accepting and lets requests in flight finish
     * (or, with `force`, closes them), then checkpoints and closes the
     * database. The facilitator and database given in the options stay the
     * caller's to close.
     */
    stop(force = false): Promise<void> {
      stopped ??= (async () => {
        await watchers?.close();
        await reconciler.stop();
        await server.stop(force);
        if (!options.db) db.sqlite.close();
      })();
      return stopped;
    },
  };
}

export type RunningServer = Awaited<ReturnType<typeof startServer>>;
