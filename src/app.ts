/**
 * The composition root: builds the services over the app's stores and hands
 * each feature module the dependencies it declares. No module imports this
 * file. createApp never listens: tests call `app.handle(new Request(...))`;
 * server.ts serves it.
 */
import { Elysia } from "elysia";
import { dashboardModule } from "./dashboard/routes";
import type { Db } from "./db/client";
import { type Database, isPg } from "./db/database";
import { createAccessTokens } from "./entitlements/access-token";
import { contractVerifier } from "./entitlements/contract-verifier";
import { entitlementsModule } from "./entitlements/routes";
import { createSiwx } from "./entitlements/siwx";
import type { Facilitator } from "./facilitator/types";
import { createCatalog } from "./gateway/catalog";
import { createPurchase } from "./gateway/purchase";
import { createGatewayHandler, gatewayModule } from "./gateway/routes";
import { createVerifyLimiter } from "./gateway/verify-limiter";
import { errors } from "./http/errors";
import { healthModule } from "./http/health";
import type { Logger } from "./http/logging";
import { instructionsModule } from "./instructions/routes";
import { chainReaders } from "./ledger/chain-lookup";
import { createPgLease, RECONCILE_LEASE, reconcileLeaseMs } from "./ledger/lease-pg";
import { createReconciler } from "./ledger/reconcile";
import { resolvePayment } from "./ledger/resolve";
import { resolveDeps } from "./ledger/resolve-deps";
import { paymentsModule } from "./ledger/routes";
import { createLedgerSettler } from "./ledger/settler";
import type { Dispatcher } from "./notifications/dispatcher";
import { webhooksModule } from "./notifications/routes";
import { createPaywall, PAGE_HEADERS } from "./paywall/paywall";
import { paywallModule } from "./paywall/routes";
import { configModule } from "./pricing/routes";
import type { Pricing } from "./pricing/service";
import type { Settings } from "./settings";
import { observePurchase } from "./stats/observe";
import { statsModule } from "./stats/routes";
import { createStats } from "./stats/service";
import { createStores, type Stores } from "./stores";
import { tokensModule } from "./tokens/routes";

export interface AppDeps {
  settings: Settings;
  db: Database;
  log: Logger;
  /** HS256 secret of management tokens (JWT_SECRET or the generated one). */
  jwtSecret: string;
  facilitator: Facilitator;
  /** Declarative pricing (config/*.yaml): reload state for GET /v3/x402/config. */
  pricing?: Pricing;
  /**
   * The stores over `db`, when the caller writes through them too (server.ts, tests); else made
   * here. The gateway's catalog sees only writes that bump the signal of the stores it was made with.
   */
  stores?: Stores;
  /** Where buyers reach this server, for the 402's resource URLs; default PUBLIC_URL. */
  publicUrl?: string;
  /** Sends the webhook outbox (server.ts runs it); without it events are only queued. */
  dispatcher?: Dispatcher;
  /** Names a request's client (server.ts: the peer, or X-Forwarded-For with TRUST_PROXY); default unknown. */
  clientAddress?: (request: Request) => string | undefined;
}

/**
 * Every service once, and the feature modules over them. The gateway
 * handler is returned beside the app so the server can also put it on Bun's
 * router: one catalog and one in-flight map for both routes.
 */
export function composeApp(deps: AppDeps) {
  const { settings, jwtSecret } = deps;
  if (!deps.stores && isPg(deps.db)) throw new Error("composeApp: PostgreSQL stores must be given (createPgStores)");
  const stores = deps.stores ?? createStores(deps.db as Db, settings);
  const { payments, entitlements } = stores;
  const publicUrl = deps.publicUrl ?? settings.publicUrl;
  const stats = createStats(deps.db, {
    instructionName: async (id) => {
      try {
        return (await stores.instructions.get(id)).name;
      } catch {
        return undefined; // deleted since it sold
      }
    },
    pathsOf: () => new Map(stores.content.list().map((f) => [f.cid, f.path])),
  });
  const chain = chainReaders(settings);
  // What settling and resolving from the chain share: stores, the one-transaction write, log, bounds, the RPC,
  // the webhook events queued in the settle transaction.
  const reconcileDeps = resolveDeps(stores, settings, deps.log, chain?.lookup);
  // The chain decides (ledger/chain-check.ts): confirm remote settlements, resolve unconfirmed ones.
  const settler = createLedgerSettler({
    ...reconcileDeps,
    facilitator: stats.metrics.instrument(deps.facilitator),
    confirm: chain?.confirm,
  });
  // Pending rows resolved from the chain: in the background (server.ts starts it) and by operators.
  // Several replicas on one PostgreSQL: one reconciles at a time, under a lease that moves when it dies.
  const lease = isPg(deps.db)
    ? createPgLease(deps.db, RECONCILE_LEASE, reconcileLeaseMs(settings.reconcileSeconds))
    : undefined;
  const reconciler = createReconciler({
    ...reconcileDeps,
    intervalSeconds: settings.reconcileSeconds,
    lease: lease && (() => lease.hold()),
    releaseLease: lease && (() => lease.release()),
  });
  const catalog = createCatalog(stores, { ...settings, publicUrl });
  const purchase = observePurchase(
    createPurchase({
      catalog,
      payments,
      settler,
      entitlements,
      accessTokens: createAccessTokens({ managementSecret: jwtSecret }),
      accessTokenTtlSeconds: settings.accessTokenTtlSeconds,
      siwx: createSiwx({
        // domain and uri come from PUBLIC_URL, never from a request's Host header (X402.md, trap 11)
        publicUrl,
        secret: jwtSecret,
        nonces: stores.siwxNonces,
        verifyContract: settings.rpcUrl
          ? contractVerifier(settings.rpcUrl, Math.min(10_000, settings.facilitatorTimeoutMs))
          : undefined,
      }),
      paymentIdentifiers: stores.paymentIdentifiers,
      verifyLimiter: createVerifyLimiter({ perMinute: settings.verifyFailuresPerMinute }),
    }),
    { counters: stats.counters, metrics: stats.metrics, peek: catalog.peek },
  );
  const paywall = createPaywall({
    publicUrl,
    presentation: () => deps.pricing?.presentation() ?? {},
    catalog,
    content: stores.content,
  });
  const gateway = createGatewayHandler({
    purchase,
    secureCookies: publicUrl.startsWith("https:"),
    clientAddress: deps.clientAddress,
    pages: { offerPage: paywall.offerPage, disposition: paywall.disposition, headers: PAGE_HEADERS },
  });
  // Every management module checks tokens against the one revocation store.
  const { tokens } = stores;
  const app = new Elysia()
    .use(errors)
    .use(instructionsModule({ store: stores.instructions, settings, jwtSecret, tokens }))
    .use(paymentsModule({ payments, jwtSecret, tokens, resolve: (r) => resolvePayment(reconcileDeps, r) }))
    .use(statsModule({ stats, jwtSecret, tokens }))
    .use(
      entitlementsModule({ entitlements: stores.entitlements, instructions: stores.instructions, jwtSecret, tokens }),
    )
    .use(configModule({ pricing: deps.pricing, settings, jwtSecret, tokens }))
    .use(tokensModule({ tokens, jwtSecret }))
    .use(webhooksModule({ notifications: stores.notifications, dispatcher: deps.dispatcher, jwtSecret, tokens }))
    .use(dashboardModule({ ...stores, pricing: deps.pricing, facilitator: deps.facilitator, settings, jwtSecret }))
    .use(
      healthModule({
        database: stores,
        facilitator: deps.facilitator,
        pricing: deps.pricing,
        timeoutMs: settings.facilitatorTimeoutMs,
      }),
    )
    .use(gatewayModule(gateway))
    .use(paywallModule(paywall, settings));
  return { app, gateway, stores, settler, stats, reconciler };
}

export const createApp = (deps: AppDeps) => composeApp(deps).app;

export type App = ReturnType<typeof createApp>;
