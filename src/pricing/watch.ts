/**
 * Hot reload: pricing files and content files are watched; a save, an
 * editor's atomic rename, a new or a deleted file all lead to one debounced
 * reload, so the new state serves well within a second of the save.
 *
 * Some editors save by moving the old file aside and writing a new one, or by
 * truncating it and writing again; for a moment (or, on a slow disk or a
 * network share, for a long one) the file is missing or empty. A reload in
 * that moment would delete its instructions and re-create them with new ids,
 * so while the pricing service holds a file in doubt (CONFIG_SETTLE_MS,
 * service.ts) the watcher looks again every 25 ms and reloads as soon as the
 * file has content again, or once the window has passed (a real deletion
 * still applies).
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import type { ContentStore } from "../content/store";
import { type FolderWatcher, watchFolder } from "../content/watch";
import { logFailure } from "../http/log-paths";
import type { Logger } from "../http/logging";
import { findPricingFiles } from "./load";
import type { Pricing } from "./service";

export interface PricingWatchOptions {
  configDir: string;
  pricing: Pricing;
  log?: Logger;
  debounceMs?: number;
  pollMs?: number;
}

/** How often a file in doubt is looked at again: the editor's write usually lands within milliseconds. */
const RECHECK_MS = 25;

/** Names, sizes and mtimes of the pricing files: a poll reloads only when this moves. */
function signature(configDir: string): string {
  return findPricingFiles(configDir)
    .map((f) => {
      try {
        const s = statSync(join(configDir, f));
        return `${f}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
      } catch {
        return `${f}:gone`;
      }
    })
    .join("\n");
}

export function watchPricing(opts: PricingWatchOptions): FolderWatcher {
  let last = signature(opts.configDir);
  return watchFolder(
    opts.configDir,
    async (reason) => {
      for (let left = opts.pricing.settling(); left > 0; left = opts.pricing.settling()) {
        await Bun.sleep(Math.min(left, RECHECK_MS));
      }
      const sig = signature(opts.configDir);
      // A poll with nothing moved skips the reload; an event always reloads (cheap: unchanged files are cached).
      if (reason === "poll" && sig === last && opts.pricing.status().lastReload) return;
      last = sig;
      await opts.pricing.reload("config");
    },
    {
      debounceMs: opts.debounceMs ?? 100,
      pollMs: opts.pollMs ?? 5_000,
      relevant: (name) => name === null || /\.ya?ml$/i.test(name) || !/\.[^/\\]*$/.test(name),
      onError: (e) => logFailure(opts.log, "error", {}, "pricing reload failed", e),
    },
  );
}

export interface Watchers {
  close(): Promise<void>;
}

/**
 * Both watchers as the server runs them: the content store watches its own
 * folder, and pricing re-runs after each re-index so `files:` globs pick up
 * new content.
 */
export function startWatchers(opts: {
  content: Pick<ContentStore, "watch">;
  settings: { configDir: string };
  pricing: Pricing;
  log?: Logger;
}): Watchers {
  const content = opts.content.watch({
    log: opts.log,
    // The content watcher does not wait for this reload: its failure (PostgreSQL gone for a moment) is said
    // here, not left as an unhandled rejection.
    onIndexed: () =>
      void opts.pricing.reload("content").catch((e) => logFailure(opts.log, "error", {}, "pricing reload failed", e)),
  });
  const config = watchPricing({ configDir: opts.settings.configDir, pricing: opts.pricing, log: opts.log });
  return {
    async close() {
      await Promise.all([content.close(), config.close()]);
    },
  };
}
