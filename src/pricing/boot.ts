/**
 * Start-up of content and pricing, before the server listens: index the
 * content folder (hashing only files new or changed since the last run),
 * then reconcile the pricing files. A rejected reload is logged and the
 * state already in the database keeps serving.
 */
import { indexContent } from "../content/indexer";
import type { Db } from "../db/client";
import type { Logger } from "../http/logging";
import type { Settings } from "../settings";
import { createPricing, type Pricing } from "./service";

export async function preparePricing(opts: { db: Db; settings: Settings; log: Logger }): Promise<Pricing> {
  const started = performance.now();
  const indexed = await indexContent(opts.db, opts.settings.contentDir);
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
  for (const e of indexed.errors) opts.log.warn({ path: e.path }, `content file unreadable: ${e.message}`);
  const pricing = createPricing({ db: opts.db, settings: opts.settings, log: opts.log });
  pricing.reload("start");
  return pricing;
}
