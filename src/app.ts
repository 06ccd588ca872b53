/**
 * createApp composes the feature modules into one Elysia app. It never
 * listens: tests call `app.handle(new Request(...))`; index.ts serves
 * `app.fetch` wrapped by `withRequestLog` (the per-request log line).
 */
import { Elysia } from "elysia";
import type { Db } from "./db/client";
import type { Facilitator } from "./facilitator/types";
import { errors } from "./http/errors";
import type { Logger } from "./http/logging";
import type { Settings } from "./settings";
import { createStores, type Stores } from "./stores";
import { instructionsModule } from "./instructions/routes";
import { paymentsModule } from "./ledger/routes";
import { configModule } from "./pricing/routes";
import { gatewayModule } from "./gateway/routes";

export interface AppDeps {
  settings: Settings;
  db: Db;
  log: Logger;
  /** HS256 secret of management tokens (JWT_SECRET or the generated one). */
  jwtSecret: string;
  facilitator: Facilitator;
  /** Declarative pricing (config/*.yaml): reload state for GET /v3/x402/config. */
  pricing?: import("./pricing/service").Pricing;
  /** The gateway instance, when the server also routes to it directly (src/index.ts); else one is made. */
  gateway?: import("./gateway/routes").Gateway;
  /**
   * The stores over `db`, when the caller writes through them too (src/index.ts, tests); else made
   * here. Give them whenever `gateway` is given: the gateway's catalog sees only writes that bump
   * the signal of the stores it was made with.
   */
  stores?: Stores;
}

export function createApp(deps: AppDeps) {
  // One set per app: the management API and the gateway's catalog must share one change signal.
  const stores = deps.stores ?? createStores(deps.db, deps.settings);
  return new Elysia()
    .use(errors)
    .use(instructionsModule({ store: stores.instructions, settings: deps.settings, jwtSecret: deps.jwtSecret }))
    .use(paymentsModule(deps))
    .use(configModule(deps))
    .use(gatewayModule({ ...deps, stores }));
}

export type App = ReturnType<typeof createApp>;
