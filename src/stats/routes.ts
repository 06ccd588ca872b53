/**
 * GET /v3/x402/stats, GET /v3/x402/stats/breakdown and GET /metrics, all
 * with a read-scope management token. /metrics is guarded like the rest of
 * the management API (Prometheus sends it with `authorization.credentials_file`)
 * rather than on a second port: one listener, one way in, nothing to open
 * by mistake (docs/metrics.md).
 */
import { Elysia } from "elysia";
import { canonicalCid } from "../content/cid";
import { type AuthDeps, auth } from "../http/auth";
import { invalidInput } from "../http/errors";
import { parseLimit } from "../http/paging";
import { BREAKDOWN_LIMIT, BreakdownQuery, BreakdownResponse, type Bucket, StatsQuery, StatsResponse } from "./model";
import type { StatsRequest } from "./report";
import type { Stats } from "./service";

export const STATS_PREFIX = "/v3/x402/stats";

export interface StatsDeps extends AuthDeps {
  stats: Stats;
}

function time(text: string | undefined, path: string): number | undefined {
  if (!text) return undefined;
  const t = Date.parse(text);
  if (Number.isNaN(t)) throw invalidInput([{ path, message: "must be an ISO 8601 date-time" }]);
  return t;
}

/** The query's filter in the report's terms; a 400 naming the field for what is not valid. */
function requestOf(query: StatsQuery): StatsRequest {
  let cid: string | undefined;
  if (query.cid) {
    cid = canonicalCid(query.cid);
    if (!cid) throw invalidInput([{ path: "cid", message: "is not a valid CID (v0 or v1)" }]);
  }
  return {
    from: time(query.from, "from"),
    to: time(query.to, "to"),
    bucket: (query.bucket ?? "day") as Bucket,
    cid,
    instructionId: query.instruction?.toLowerCase() || undefined,
  };
}

function answer<T>(result: T | { error: "range"; message: string }): T {
  if (result && typeof result === "object" && "error" in result && result.error === "range")
    throw invalidInput([{ path: "from", message: result.message }]);
  return result as T;
}

export function statsModule(deps: StatsDeps) {
  const { stats } = deps;
  return new Elysia({ name: "stats" })
    .use(auth(deps))
    .get(STATS_PREFIX, async ({ query }) => ({ data: answer(await stats.report.stats(requestOf(query))) }), {
      scope: "read",
      query: StatsQuery,
      response: StatsResponse,
      detail: {
        tags: ["stats"],
        summary: "Revenue, sales, offers, proofs and conversion per hour, day, week or month",
      },
    })
    .get(
      `${STATS_PREFIX}/breakdown`,
      async ({ query }) => ({
        data: answer(
          await stats.report.breakdown({
            ...requestOf(query),
            by: query.by ?? "cid",
            sort: query.sort ?? "revenue",
            limit: parseLimit(query.limit, BREAKDOWN_LIMIT),
          }),
        ),
      }),
      {
        scope: "read",
        query: BreakdownQuery,
        response: BreakdownResponse,
        detail: {
          tags: ["stats"],
          summary: "The funnel and revenue per CID or per instruction, with sales per bucket",
        },
      },
    )
    .get(
      "/metrics",
      async () =>
        new Response(await stats.metrics.text(), {
          headers: { "Content-Type": stats.metrics.contentType, "Cache-Control": "no-store" },
        }),
      {
        scope: "read",
        detail: {
          tags: ["stats"],
          summary: "Prometheus metrics (text format)",
          responses: { 200: { description: "Prometheus text exposition format", content: { "text/plain": {} } } },
        },
      },
    );
}
