/**
 * Boot: settings -> db -> pricing sync -> listen -> watchers -> signals.
 */
import { createApp } from "./app";
import { openDb } from "./db/client";
import { createFacilitator } from "./facilitator/create";
import { createLogger } from "./http/logging";
import { loadSettings, SettingsError } from "./settings";

let settings;
try {
  settings = loadSettings();
} catch (e) {
  if (e instanceof SettingsError) {
    console.error(`cidgate: bad setting ${e.message}`);
    process.exit(2);
  }
  throw e;
}

const log = createLogger(settings.logLevel);
const db = openDb(settings.db);
const jwtSecret = (await import("./http/jwt-secret")).resolveJwtSecret(settings); // BOOT:jwt: JWT_SECRET or data/jwt-secret (0600)
const facilitator = createFacilitator(settings, log);
// BOOT:pricing (sync config/*.yaml, index content/ before serving)
const pricing = await (await import("./pricing/boot")).preparePricing({ db, settings, log });

const app = createApp({ settings, db, log, jwtSecret, facilitator, pricing });
app.listen({ port: settings.port, hostname: settings.host, maxRequestBodySize: 1024 * 1024 });

console.log(`cidgate listening on http://${settings.host}:${app.server?.port} (public URL ${settings.publicUrl})`);
console.log(`database: ${settings.db}`);
console.log(`make a management token: bun run cidgate token create --scope read,write --ttl 30d`);
// BOOT:watchers (pricing + content)
const watchers = (await import("./pricing/watch")).startWatchers({ db, settings, pricing, log });

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`cidgate: ${signal}, finishing requests in flight`);
  // BOOT:stop-watchers
  await watchers.close();
  await app.stop(false); // stop accepting; let requests in flight finish
  db.sqlite.close();
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
