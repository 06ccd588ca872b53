/**
 * Boot: settings -> db -> content index + pricing sync -> listen -> watchers -> signals.
 */
import { createApp } from "./app";
import { openDb } from "./db/client";
import { createFacilitator } from "./facilitator/create";
import { resolveJwtSecret } from "./http/jwt-secret";
import { createGateway, gatewayRoutes } from "./gateway/routes";
import { createLogger, withRequestLog } from "./http/logging";
import { preparePricing } from "./pricing/boot";
import { startWatchers } from "./pricing/watch";
import { loadSettingsOrReport } from "./settings";
import { createStores } from "./stores";

const settings = loadSettingsOrReport("cidgate") ?? process.exit(2);

const log = createLogger(settings.logLevel);
const db = openDb(settings.db);
const jwtSecret = resolveJwtSecret(settings); // JWT_SECRET, or one generated once into the data folder (0600)
const facilitator = createFacilitator(settings, log);
// One set of stores (and one catalog change signal) shared by pricing, the gateway and the API.
const stores = createStores(db, settings);
// Index content/ and reconcile config/ before the first request, so the first answer is already right.
const pricing = await preparePricing({ ...stores, settings, log });

const gateway = createGateway({ settings, db, log, facilitator, stores });
const app = createApp({ settings, db, log, jwtSecret, facilitator, pricing, gateway, stores });
// Served through the request-log wrapper (one line per request, X-Request-Id), not app.listen;
// the gateway's routes go straight to it through Bun's router, everything else through the app.
// The JSON body check answers 413 itself at 1 MiB in the error shape; Bun's own limit (an
// empty 413) is only the backstop for bodies that never reach it.
const server = Bun.serve({
  port: settings.port,
  hostname: settings.host,
  maxRequestBodySize: 16 * 1024 * 1024,
  idleTimeout: 30, // seconds: room for slow clients of large files
  development: false, // never Bun's HTML error page
  routes: gatewayRoutes(gateway, (handler, path) => withRequestLog(handler, log, path)),
  fetch: withRequestLog(app.fetch, log),
});

console.log(`cidgate listening on http://${settings.host}:${server.port} (public URL ${settings.publicUrl})`);
console.log(`database: ${settings.db}`);
console.log(`make a management token: npx cidgate token create --scope read,write --ttl 30d`);
const watchers = startWatchers({ content: stores.content, settings, pricing, log });

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`cidgate: ${signal}, finishing requests in flight`);
  await watchers.close();
  await server.stop(false); // stop accepting; let requests in flight finish
  db.sqlite.close();
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
