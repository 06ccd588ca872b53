/**
 * The pricing reloader: load every file, and only if all are valid, reconcile
 * them into the database. It remembers the last reload (time, result, what
 * changed, errors) for GET /v3/x402/config and the log. A reload is fully
 * synchronous, so two can never interleave and no request sees half of one.
 */
import { existsSync } from "node:fs";
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
  reload(trigger: ReloadTrigger): ReloadReport;
  status(): PricingStatus;
  /** `site:` and `storefront:` of the state being served (the last reload not rejected). */
  presentation(): Presentation;
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
}

export function createPricing(opts: PricingOptions): Pricing {
  const cache: ParseCache = new Map();
  const env = opts.env ?? process.env;
  const now = opts.now ?? (() => new Date());
  let lastReload: ReloadReport | undefined;
  let lastGood: PricingStatus["lastGood"];
  let presentation: Presentation = {};
  let loggedWarnings: string[] = [];

  function reload(trigger: ReloadTrigger): ReloadReport {
    const started = performance.now();
    const at = now();
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
    if (loaded.errors.length === 0 && !existsSync(opts.settings.configDir) && opts.instructions.hasFileInstructions()) {
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
      const synced = reconcile(opts.instructions, loaded.instructions, at);
      if (synced.ok) {
        const hooks = opts.webhooks?.syncFiles(loaded.webhooks);
        const moved =
          changed(synced.changes) || (hooks !== undefined && hooks.created + hooks.updated + hooks.deleted > 0);
        report = { ...report, result: moved ? "applied" : "unchanged", changes: synced.changes };
      } else report = { ...report, errors: synced.errors };
    }
    report.durationMs = Math.round((performance.now() - started) * 100) / 100;
    lastReload = report;
    if (report.result !== "rejected") {
      lastGood = { at: report.at, trigger, files: report.files, instructions: report.instructions, cids: report.cids };
      // A new object only when something moved: the paywall caches its pages by this identity.
      if (JSON.stringify(loaded.presentation) !== JSON.stringify(presentation)) presentation = loaded.presentation;
    }
    log(report);
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
  };
}
