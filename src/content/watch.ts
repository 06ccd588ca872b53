/**
 * Folder watching shared by the content index and the pricing files:
 * filesystem events (recursive, so new sub-folders count) are debounced into
 * one run, runs never overlap (events during a run schedule one more), and a
 * slow poll catches what events miss (a folder created after start, network
 * filesystems, a watcher that died).
 */
import { type FSWatcher, watch } from "node:fs";
import { logFailure } from "../http/log-paths";
import type { Logger } from "../http/logging";
import { type IndexChanges, indexMoved } from "./indexer";

export interface FolderWatcher {
  /** Run now (debounced like an event). */
  poke(): void;
  /** Stop watching; resolves after a run in progress has finished. */
  close(): Promise<void>;
}

export interface WatchFolderOptions {
  /** Quiet time after the last event before running. */
  debounceMs?: number;
  /** Run every so often even without events; 0 disables. */
  pollMs?: number;
  /** Whether an event for this path (relative to the folder) matters. */
  relevant?: (path: string | null) => boolean;
  onError?: (error: unknown) => void;
}

/** Why a run happens: something changed ("event", or `poke`), or only the clock ("poll"). */
export type RunReason = "event" | "poll";

export function watchFolder(
  dir: string,
  run: (reason: RunReason) => Promise<void> | void,
  opts: WatchFolderOptions = {},
): FolderWatcher {
  const debounceMs = opts.debounceMs ?? 100;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let pending: RunReason = "poll";
  let closed = false;
  let watcher: FSWatcher | undefined;

  const execute = async () => {
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        const reason = pending;
        pending = "poll";
        try {
          await run(reason);
        } catch (e) {
          opts.onError?.(e);
        }
      } while (again && !closed);
    })();
    await running;
    running = undefined;
  };

  const schedule = () => {
    if (closed) return;
    pending = "event";
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void execute();
    }, debounceMs);
  };

  const arm = () => {
    if (watcher || closed) return;
    try {
      watcher = watch(dir, { recursive: true }, (_event, name) => {
        if (!opts.relevant || opts.relevant(name === null ? null : String(name))) schedule();
      });
      watcher.on("error", () => {
        watcher?.close();
        watcher = undefined; // re-armed by the next poll
      });
    } catch {
      watcher = undefined; // folder missing: the poll re-arms when it appears
    }
  };

  arm();
  const poll =
    (opts.pollMs ?? 0) > 0
      ? setInterval(() => {
          const wasArmed = watcher !== undefined;
          arm();
          if (!wasArmed && watcher) schedule();
          else if (!running) void execute();
        }, opts.pollMs)
      : undefined;
  poll?.unref?.();

  return {
    poke: schedule,
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      if (poll) clearInterval(poll);
      watcher?.close();
      await running;
    },
  };
}

export interface ContentWatchOptions {
  log?: Logger;
  /**
   * Called after a run that added, changed or removed files; awaited, so a failure
   * (pricing's reload hitting the database) is logged by onError, not left unhandled.
   */
  onIndexed?: (changes: IndexChanges) => unknown;
  debounceMs?: number;
  pollMs?: number;
}

/**
 * Keeps content_files current while the server runs: `index` is the content
 * store's, the only writer of that table (reach this through its `watch()`).
 */
export function watchContent(
  contentDir: string,
  index: () => Promise<IndexChanges>,
  opts: ContentWatchOptions = {},
): FolderWatcher {
  return watchFolder(
    contentDir,
    async () => {
      const changes = await index();
      for (const e of changes.errors)
        logFailure(opts.log, "warn", { path: e.path }, "content file unreadable", e.message);
      if (!indexMoved(changes)) return;
      opts.log?.info(
        { added: changes.added.length, changed: changes.changed.length, removed: changes.removed.length },
        "content index updated",
      );
      await opts.onIndexed?.(changes);
    },
    {
      debounceMs: opts.debounceMs ?? 150,
      pollMs: opts.pollMs ?? 30_000,
      // Hidden names are temp files (ours from `content add`, editors'): their final rename is an event too.
      relevant: (name) => name === null || !name.split(/[\\/]/).some((s) => s.startsWith(".")),
      onError: (e) => logFailure(opts.log, "error", {}, "content indexing failed", e),
    },
  );
}
