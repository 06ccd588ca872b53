/** The whole app with pricing wired in, for the config route and hot-reload tests. */
import { createApp } from "../../src/app";
import type { Db } from "../../src/db/client";
import type { Facilitator } from "../../src/facilitator/types";
import { createToken } from "../../src/http/auth";
import { createLogger } from "../../src/http/logging";
import type { Pricing } from "../../src/pricing/service";
import type { Settings } from "../../src/settings";
import type { Stores } from "../../src/stores";

export const SECRET = "pricing-test-secret-long-enough-0123456789";

/** The paths these tests take (management API, the 402 answer) never reach a facilitator. */
const unusedFacilitator: Facilitator = {
  verify: () => Promise.reject(new Error("unused")),
  settle: () => Promise.reject(new Error("unused")),
  supported: () => Promise.reject(new Error("unused")),
};

/** `stores`: the ones pricing writes through, so the app's catalog sees its reloads at once. */
export async function makeApp(opts: { settings: Settings; db: Db; stores?: Stores; pricing?: Pricing }) {
  const app = createApp({
    settings: opts.settings,
    db: opts.db,
    stores: opts.stores,
    log: createLogger("silent"),
    jwtSecret: SECRET,
    facilitator: unusedFacilitator,
    pricing: opts.pricing,
  });
  return {
    app,
    read: await createToken(SECRET, { scopes: ["read"], ttlSeconds: 600 }),
    write: await createToken(SECRET, { scopes: ["write"], ttlSeconds: 600 }),
  };
}
