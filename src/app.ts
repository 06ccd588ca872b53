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
}

export function createApp(deps: AppDeps) {
  return new Elysia()
    .use(errors)
    .use(instructionsModule(deps))
    .use(paymentsModule(deps))
    .use(configModule(deps))
    .use(gatewayModule(deps));
}

export type App = ReturnType<typeof createApp>;
