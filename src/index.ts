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
const jwtSecret = settings.jwtSecret ?? "STUB-replace-with-generated-secret-0000000000"; // BOOT:jwt
const facilitator = createFacilitator(settings);
// BOOT:pricing (sync config/*.yaml, index content/ before serving)

const app = createApp({ settings, db, log, jwtSecret, facilitator });
app.listen({ port: settings.port, hostname: settings.host, maxRequestBodySize: 1024 * 1024 });

console.log(`cidgate listening on http://${settings.host}:${app.server?.port} (public URL ${settings.publicUrl})`);
console.log(`database: ${settings.db}`);
console.log(`make a management token: bun run cidgate token create --scope read,write --ttl 30d`);
// BOOT:watchers (pricing + content)

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`cidgate: ${signal}, finishing requests in flight`);
  // BOOT:stop-watchers
  await app.stop(false); // stop accepting; let requests in flight finish
  db.sqlite.close();
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
