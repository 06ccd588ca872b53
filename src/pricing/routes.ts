/**
 * GET /v3/x402/config (read scope): what the pricing files last did — when,
 * with what result, what changed, and every error with file:line:column —
 * and which reload's state is being served.
 * POST /v3/x402/config/reload (write scope): reload now, answer the report.
 */
import { Elysia } from "elysia";
import { type AuthDeps, auth } from "../http/auth";
import { ApiError } from "../http/errors";
import type { Settings } from "../settings";
import type { PricingProblem } from "./load";
import type { Pricing, ReloadReport } from "./service";
import type { InstructionChange } from "./sync";

const problem = (p: PricingProblem) => ({
  file: p.file,
  line: p.line,
  column: p.column,
  rule: p.rule,
  message: p.message,
});
const change = (c: InstructionChange) => ({ id: c.id, source: c.source, name: c.name, version: c.version });

function reportToWire(r: ReloadReport) {
  return {
    at: r.at,
    trigger: r.trigger,
    result: r.result,
    duration_ms: r.durationMs,
    files: r.files,
    instructions: r.instructions,
    cids: r.cids,
    changes: {
      created: r.changes.created.map(change),
      updated: r.changes.updated.map(change),
      deleted: r.changes.deleted.map(change),
      cids_attached: r.changes.cidsAttached,
      cids_detached: r.changes.cidsDetached,
    },
    errors: r.errors.map(problem),
    warnings: r.warnings.map(problem),
  };
}

/** What the config routes need; app.ts passes its deps, which have these. */
export interface ConfigDeps extends AuthDeps {
  /** Absent when this server does not load pricing files (reload answers 503). */
  pricing?: Pricing;
  settings: Pick<Settings, "configDir" | "contentDir">;
}

export function configModule(deps: ConfigDeps) {
  return new Elysia({ name: "config", prefix: "/v3/x402/config" })
    .use(auth(deps))
    .get(
      "",
      () => {
        const s = deps.pricing?.status();
        return {
          data: {
            config_dir: s?.configDir ?? deps.settings.configDir,
            content_dir: s?.contentDir ?? deps.settings.contentDir,
            watching: deps.pricing !== undefined,
            last_reload: s?.lastReload ? reportToWire(s.lastReload) : null,
            serving: s?.lastGood
              ? {
                  at: s.lastGood.at,
                  trigger: s.lastGood.trigger,
                  files: s.lastGood.files,
                  instructions: s.lastGood.instructions,
                  cids: s.lastGood.cids,
                }
              : null,
          },
        };
      },
      {
        scope: "read",
        detail: {
          summary: "Last pricing reload: time, result, changes, errors",
          tags: ["config"],
          responses: { 200: { description: "the pricing state under `data`" } },
        },
      },
    )
    .post(
      "/reload",
      async ({ set }) => {
        if (!deps.pricing) throw new ApiError(503, "pricing_disabled", "pricing files are not loaded by this server");
        const report = await deps.pricing.reload("manual");
        if (report.result === "rejected") set.status = 422;
        return { data: reportToWire(report) };
      },
      {
        scope: "write",
        detail: {
          summary: "Reload the pricing files now",
          tags: ["config"],
          responses: {
            200: { description: "applied (or nothing changed); the report under `data`" },
            422: {
              description: "rejected: the files have errors, the last good pricing stays; the report under `data`",
            },
            503: { description: "this server does not load pricing files" },
          },
        },
      },
    );
}
