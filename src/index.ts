/**
 * `npm start`: settings -> the server (server.ts) -> signals.
 */
import { type RunningServer, startServer } from "./server";
import { loadSettingsOrReport } from "./settings";

const settings = loadSettingsOrReport("cidgate") ?? process.exit(2);

// Handlers first: a signal that comes as soon as "listening" is printed must still stop cleanly.
let running: RunningServer | undefined;
let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`cidgate: ${signal}, finishing requests in flight`);
  await running?.stop(false);
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));

running = await startServer({ settings });
console.log(`cidgate listening on ${running.url} (public URL ${running.publicUrl})`);
console.log(`database: ${settings.db}`);
console.log(`make a management token: npx cidgate token create --scope read,write --ttl 30d`);
