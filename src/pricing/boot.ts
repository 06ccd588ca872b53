/**
 * Start-up of content and pricing, before the server listens: the content
 * store indexes its folder (hashing only files new or changed since the last
 * run), then the pricing files are reconciled against that index. A rejected
 * reload is logged and the state already in the database keeps serving.
 */
import type { ContentStore } from "../content/store";
import { logFailure } from "../http/log-paths";
import type { Logger } from "../http/logging";
import type { InstructionStore } from "../instructions/store";
import type { NotificationStore } from "../notifications/store";
import type { Settings } from "../settings";
import { createPricing, type Pricing } from "./service";

export async function preparePricing(opts: {
  instructions: InstructionStore;
  content: ContentStore;
  notifications?: NotificationStore;
  settings: Settings;
  log: Logger;
}): Promise<Pricing> {
  const started = performance.now();
  const indexed = await opts.content.index();
  opts.log.info(
    {
      contentDir: opts.settings.contentDir,
      added: indexed.added.length,
      changed: indexed.changed.length,
      removed: indexed.removed.length,
      unchanged: indexed.unchanged,
      ms: Math.round(performance.now() - started),
    },
    "content indexed",
  );
  for (const e of indexed.errors) logFailure(opts.log, "warn", { path: e.path }, "content file unreadable", e.message);
  const pricing = createPricing({
    instructions: opts.instructions,
    content: opts.content,
    webhooks: opts.notifications,
    settings: opts.settings,
    log: opts.log,
    settleMs: opts.settings.configSettleMs,
  });
  await pricing.reload("start");
  return pricing;
}
