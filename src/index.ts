/**
 * `npm start`: settings -> the checks (startup/preflight.ts; refused on a failure) -> the
 * server (server.ts) -> the start-up summary -> signals.
 */
import pkg from "../package.json";
import { forSaleIn } from "./catalog/listing";
import { tokenCreateCommand } from "./cli/token-hint";
import { type RunningServer, startServer } from "./server";
import { loadSettingsOrReport } from "./settings";
import { preflight } from "./startup/preflight";
import { refusesToStart } from "./startup/refuse";
import { startupSummary } from "./startup/summary";

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

// The doctor's checks before listening: a shop that cannot settle what it prices is refused.
const checked = await preflight(settings);
if (refusesToStart("cidgate", checked)) process.exit(2);
try {
  running = await startServer({ settings });
} catch (e) {
  // PostgreSQL gone or refusing between the checks and the open (db/pg.ts's one line, no password):
  // said as such, exit 1, rather than as a stack trace.
  const message = e instanceof Error ? e.message : "";
  if (!/^cannot (connect to|migrate) the PostgreSQL database /.test(message)) throw e;
  console.error(`cidgate: ${message}`);
  process.exit(1);
}
const { url, publicUrl, db, contentDb } = running;
console.log(
  startupSummary({
    version: pkg.version,
    url,
    publicUrl,
    settings,
    preflight: checked,
    forSale: await forSaleIn(db, contentDb),
  }),
);
console.log(`make a management token: ${tokenCreateCommand(settings, "--scope read,write --ttl 30d")}`);
