/**
 * The composition root: builds the services over the app's stores and hands
 * each feature module the dependencies it declares. No module imports this
 * file. createApp never listens: tests call `app.handle(new Request(...))`;
 * server.ts serves it.
 */
import { Elysia } from "elysia";
import type { Db } from "./db/client";
import { createAccessTokens } from "./entitlements/access-token";
import { contractVerifier } from "./entitlements/contract-verifier";
import { entitlementsModule } from "./entitlements/routes";
import { createSiwx } from "./entitlements/siwx";
import type { Facilitator } from "./facilitator/types";
import { createCatalog } from "./gateway/catalog";
import { createPurchase } from "./gateway/purchase";
import { createGatewayHandler, gatewayModule } from "./gateway/routes";
import { errors } from "./http/errors";
import type { Logger } from "./http/logging";
import { instructionsModule } from "./instructions/routes";
import { chainReaders } from "./ledger/chain-lookup";
import { createReconciler } from "./ledger/reconcile";
import { resolvePayment } from "./ledger/resolve";
import { resolveDeps } from "./ledger/resolve-deps";
import { paymentsModule } from "./ledger/routes";
import { createLedgerSettler } from "./ledger/settler";
import { configModule } from "./pricing/routes";
import type { Pricing } from "./pricing/service";
import type { Settings } from "./settings";
import { createStores, type Stores } from "./stores";

export interface AppDeps {
  settings: Settings;
  db: Db;
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
}

/**
 * Every service once, and the feature modules over them. The gateway
 * handler is returned beside the app so the server can also put it on Bun's
 * router: one catalog and one in-flight map for both routes.
 */
export function composeApp(deps: AppDeps) {
  const { settings, jwtSecret } = deps;
  const stores = deps.stores ?? createStores(deps.db, settings);
  const { payments, entitlements } = stores;
  const publicUrl = deps.publicUrl ?? settings.publicUrl;
  const chain = chainReaders(settings);
  // What settling and resolving from the chain share: stores, the one-transaction write, log, bounds, the RPC.
  const reconcileDeps = resolveDeps(deps.db, stores, settings, deps.log, chain?.lookup);
  // The chain decides (ledger/chain-check.ts): confirm remote settlements, resolve unconfirmed ones.
  const settler = createLedgerSettler({ ...reconcileDeps, facilitator: deps.facilitator, confirm: chain?.confirm });
  // Pending rows resolved from the chain: in the background (server.ts starts it) and by operators.
  const reconciler = createReconciler({ ...reconcileDeps, intervalSeconds: settings.reconcileSeconds });
  const catalog = createCatalog(deps.db, stores, { ...settings, publicUrl });
  const purchase = createPurchase({
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
  });
  const gateway = createGatewayHandler({ purchase, secureCookies: publicUrl.startsWith("https:") });
  const app = new Elysia()
    .use(errors)
    .use(instructionsModule({ store: stores.instructions, settings, jwtSecret }))
    .use(paymentsModule({ payments, jwtSecret, resolve: (r) => resolvePayment(reconcileDeps, r) }))
    .use(entitlementsModule({ entitlements: stores.entitlements, instructions: stores.instructions, jwtSecret }))
    .use(configModule({ pricing: deps.pricing, settings, jwtSecret }))
    .use(gatewayModule(gateway));
  return { app, gateway, stores, reconciler };
}

export const createApp = (deps: AppDeps) => composeApp(deps).app;

export type App = ReturnType<typeof createApp>;
