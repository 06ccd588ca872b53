/**
 * The pricing reloader: load every file, and only if all are valid, reconcile
 * them into the database. It remembers the last reload (time, result, what
 * changed, errors) for GET /v3/x402/config and the log. A reload is fully
 * synchronous, so two can never interleave and no request sees half of one.
 *
 * Editors' saves: a file that had instructions and is now empty or missing
 * is taken as being written (truncate-then-write, or moved aside and written
 * anew) for CONFIG_SETTLE_MS: until then no reload, whatever started it (the
 * config watcher, a content change, the poll), removes anything, so a slow
 * save never deletes and re-creates instructions under new ids (their
 * payment history stays theirs) and never turns their CIDs into 404s. A file
 * mid-write that does not parse is refused like any invalid file: the last
 * good state keeps serving. Past the window an empty or deleted file applies.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import type { ContentStore } from "../content/store";
import type { Logger } from "../http/logging";
import type { InstructionStore } from "../instructions/store";
import type { NotificationStore } from "../notifications/store";
import type { Settings } from "../settings";
import { formatProblem, loadPricing, type ParseCache, type Presentation, type PricingProblem } from "./load";
import { changed, emptyChanges, reconcile, type SyncChanges } from "./sync";

export type ReloadTrigger = "start" | "config" | "content" | "manual" | "check";

export interface ReloadReport {
  at: string;
  trigger: ReloadTrigger;
  /** applied: the database changed; unchanged: valid, nothing to write; rejected: nothing applied. */
  result: "applied" | "unchanged" | "rejected";
  durationMs: number;
  files: string[];
  /** Instructions and CIDs the files declare (when valid). */
  instructions: number;
  cids: number;
  changes: SyncChanges;
  errors: PricingProblem[];
  warnings: PricingProblem[];
}

export interface PricingStatus {
  configDir: string;
  contentDir: string;
  lastReload?: ReloadReport;
  /** The reload whose state is being served (the last one that was not rejected). */
  lastGood?: Pick<ReloadReport, "at" | "trigger" | "files" | "instructions" | "cids">;
}

export interface Pricing {
  /** One at a time: a reload asked for while one runs starts when it ends. */
  reload(trigger: ReloadTrigger): Promise<ReloadReport>;
  status(): PricingStatus;
  /** `site:` and `storefront:` of the state being served (the last reload not rejected). */
  presentation(): Presentation;
  /**
   * Milliseconds until every pricing file that turned empty or missing is
   * taken as meant (0: none is in doubt). The config watcher waits on it.
   */
  settling(): number;
}

/** Whether a pricing file reads as empty now (truncated by an editor), or is gone. */
function emptyOrMissing(path: string): boolean {
  try {
    const size = statSync(path).size;
    if (size === 0) return true;
    // Whitespace alone is as empty; only small files can be (a real file is read by the loader anyway).
    return size < 256 && readFileSync(path, "utf8").trim() === "";
  } catch {
    return true;
  }
}

export interface PricingOptions {
  /** Writes the reconciled instructions (the store owns the tables and signals the catalog). */
  instructions: Pick<InstructionStore, "syncFiles" | "hasFileInstructions">;
  /** The indexed files that `files:` entries are matched against. */
  content: Pick<ContentStore, "list">;
  /** Where the files' `notifications:` webhooks are kept in step (absent: the section is checked, not applied). */
  webhooks?: Pick<NotificationStore, "syncFiles">;
  settings: Pick<Settings, "configDir" | "contentDir" | "usdcAddressBase" | "usdcAddressBaseSepolia">;
  env?: Record<string, string | undefined>;
  log?: Logger;
  now?: () => Date;
  /**
   * CONFIG_SETTLE_MS: how long an emptied or vanished pricing file is taken as mid-save. The server
   * passes the setting (boot.ts); default 0, so a caller that reloads by hand sees its change at once.
   */
  settleMs?: number;
}

export function createPricing(opts: PricingOptions): Pricing {
  const cache: ParseCache = new Map();
  const env = opts.env ?? process.env;
  const now = opts.now ?? (() => new Date());
  let lastReload: ReloadReport | undefined;
  let lastGood: PricingStatus["lastGood"];
  let presentation: Presentation = {};
  let loggedWarnings: string[] = [];
  const settleMs = opts.settleMs ?? 0;
  /** Files that had content at the last applied reload: only those can be "being written". */
  let hadContent = new Set<string>();
  /** File -> when it was first seen empty or missing (Date.now ms). */
  const inDoubtSince = new Map<string, number>();
  /** File -> when it first failed to load after having loaded (Date.now ms): likely mid-save. */
  const brokenSince = new Map<string, number>();

  /** A refusal whose every error is in a file that loaded before and broke less than CONFIG_SETTLE_MS ago. */
  function midSave(errors: readonly PricingProblem[]): boolean {
    if (settleMs === 0 || errors.length === 0) return false;
    const t = Date.now();
    // Problems name the file under the config folder; sources (and so hadContent) name it relative to it.
    const files = new Set(errors.map((e) => relative(opts.settings.configDir, e.file).split(sep).join("/")));
    for (const f of brokenSince.keys()) if (!files.has(f)) brokenSince.delete(f);
    for (const f of files) {
      if (!hadContent.has(f)) return false;
      if (!brokenSince.has(f)) brokenSince.set(f, t);
      if (t - brokenSince.get(f)! >= settleMs) return false;
    }
    return true;
  }

  /** The files in doubt now, with how long each still has (ms, > 0). */
  function inDoubt(): { file: string; leftMs: number }[] {
    const t = Date.now();
    const out: { file: string; leftMs: number }[] = [];
    for (const file of hadContent) {
      if (!emptyOrMissing(join(opts.settings.configDir, file))) {
        inDoubtSince.delete(file);
        continue;
      }
      let since = inDoubtSince.get(file);
      if (since === undefined) inDoubtSince.set(file, (since = t));
      if (t - since < settleMs) out.push({ file, leftMs: since + settleMs - t });
    }
    return out;
  }

  let queue: Promise<unknown> = Promise.resolve();
  function reload(trigger: ReloadTrigger): Promise<ReloadReport> {
    const next = queue.then(() => reloadNow(trigger));
    queue = next.catch(() => undefined);
    return next;
  }

  async function reloadNow(trigger: ReloadTrigger): Promise<ReloadReport> {
    const started = performance.now();
    const at = now();
    const doubtful = trigger === "check" || settleMs === 0 ? [] : inDoubt();
    if (doubtful.length > 0) return deferred(trigger, at, started, doubtful);
    const loaded = loadPricing({
      configDir: opts.settings.configDir,
      settings: opts.settings,
      env,
      content: opts.content.list(),
      cache,
    });
    const cids = loaded.instructions.reduce((n, i) => n + i.cids.length, 0);
    let report: ReloadReport = {
      at: at.toISOString(),
      trigger,
      result: "rejected",
      durationMs: 0,
      files: loaded.files,
      instructions: loaded.instructions.length,
      cids,
      changes: emptyChanges(),
      errors: loaded.errors,
      warnings: loaded.warnings,
    };
    if (
      loaded.errors.length === 0 &&
      !existsSync(opts.settings.configDir) &&
      (await opts.instructions.hasFileInstructions())
    ) {
      // A mistyped CIDGATE_CONFIG_DIR or an unmounted volume must not delete every declared instruction.
      report.errors = [
        {
          file: opts.settings.configDir,
          line: 1,
          column: 1,
          rule: "config-dir",
          message:
            "the config folder does not exist; instructions from pricing files are kept (create the folder, even empty, to remove them)",
        },
      ];
    }
    if (report.errors.length === 0) {
      const synced = await reconcile(opts.instructions, loaded.instructions, at);
      if (synced.ok) {
        const hooks = await opts.webhooks?.syncFiles(loaded.webhooks);
        const moved =
          changed(synced.changes) || (hooks !== undefined && hooks.created + hooks.updated + hooks.deleted > 0);
        report = { ...report, result: moved ? "applied" : "unchanged", changes: synced.changes };
      } else report = { ...report, errors: synced.errors };
    }
    report.durationMs = Math.round((performance.now() - started) * 100) / 100;
    lastReload = report;
    if (report.result === "rejected" && midSave(report.errors)) {
      // Refused as any invalid file is (nothing removed, the last good state serves), said quietly.
      opts.log?.info(
        { trigger, files: [...brokenSince.keys()] },
        "pricing file does not parse yet: taken as being saved; the last good state keeps serving",
      );
      return report;
    }
    if (report.result !== "rejected") {
      brokenSince.clear();
      lastGood = { at: report.at, trigger, files: report.files, instructions: report.instructions, cids: report.cids };
      // A new object only when something moved: the paywall caches its pages by this identity.
      if (JSON.stringify(loaded.presentation) !== JSON.stringify(presentation)) presentation = loaded.presentation;
      hadContent = new Set(
        loaded.instructions.map((i) => i.source.slice("file:".length, i.source.length - i.key.length - 1)),
      );
    }
    log(report);
    return report;
  }

  /** Nothing applied: a file is being written. Reported as a refusal (the last good state serves), logged quietly. */
  function deferred(
    trigger: ReloadTrigger,
    at: Date,
    started: number,
    doubtful: { file: string; leftMs: number }[],
  ): ReloadReport {
    const report: ReloadReport = {
      at: at.toISOString(),
      trigger,
      result: "rejected",
      durationMs: Math.round((performance.now() - started) * 100) / 100,
      files: lastReload?.files ?? [],
      instructions: lastGood?.instructions ?? 0,
      cids: lastGood?.cids ?? 0,
      changes: emptyChanges(),
      errors: doubtful.map(({ file, leftMs }) => ({
        file: join(opts.settings.configDir, file), // as every other problem names it
        line: 1,
        column: 1,
        rule: "file-settling",
        message: `is empty or missing: taken as being saved for up to ${settleMs} ms (${Math.ceil(leftMs)} ms left); nothing it declares is removed before`,
      })),
      warnings: [],
    };
    lastReload = report;
    opts.log?.info(
      { trigger, files: doubtful.map((d) => d.file), waitMs: Math.ceil(Math.max(...doubtful.map((d) => d.leftMs))) },
      "pricing file empty or missing: waiting for the save to finish",
    );
    return report;
  }

  function log(r: ReloadReport) {
    const l = opts.log;
    if (!l) return;
    const c = r.changes;
    const summary = {
      trigger: r.trigger,
      result: r.result,
      ms: r.durationMs,
      files: r.files.length,
      instructions: r.instructions,
      cids: r.cids,
      created: c.created.length,
      updated: c.updated.length,
      deleted: c.deleted.length,
      cidsAttached: c.cidsAttached,
      cidsDetached: c.cidsDetached,
    };
    if (r.result === "rejected") {
      l.error(
        { ...summary, errors: r.errors.map(formatProblem) },
        "pricing reload rejected; the last good state keeps serving",
      );
    } else if (r.result === "applied" || r.trigger === "start") {
      l.info(summary, "pricing reloaded");
    }
    // The same warning on every reload (a glob still matching nothing) is said once.
    const said = new Set(loggedWarnings);
    loggedWarnings = r.warnings.map(formatProblem);
    for (const w of loggedWarnings) if (!said.has(w)) l.warn(w);
  }

  return {
    reload,
    status: () => ({
      configDir: opts.settings.configDir,
      contentDir: opts.settings.contentDir,
      lastReload,
      lastGood,
    }),
    presentation: () => presentation,
    settling: () => (settleMs === 0 ? 0 : Math.max(0, ...inDoubt().map((d) => d.leftMs))),
  };
}
