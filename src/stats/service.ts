/**
 * The statistics of one app, put together: the offer and proof counters
 * (flushed every few seconds, and at stop), the reads, the report behind
 * GET /v3/x402/stats and the Prometheus metrics. Made once by the
 * composition root (app.ts); the server starts its flushing and stops it.
 */
import type { Db } from "../db/client";
import { createFunnelCounters } from "./counters";
import { createMetrics } from "./metrics";
import { createStatsQueries } from "./queries";
import { createReport, type ReportDeps } from "./report";

export function createStats(
  db: Db,
  options: { flushIntervalMs?: number } & Pick<ReportDeps, "instructionName" | "pathsOf"> = {},
) {
  const counters = createFunnelCounters(db.sqlite, options);
  const queries = createStatsQueries(db.sqlite);
  const metrics = createMetrics({ queries, counters });
  const report = createReport({
    queries,
    unflushed: counters.unflushed,
    instructionName: options.instructionName,
    pathsOf: options.pathsOf,
  });
  return {
    counters,
    queries,
    metrics,
    report,
    /** Starts the periodic flush of the counters. */
    start: () => counters.start(),
    /** Writes every count left (a clean stop loses none). */
    stop: () => counters.stop(),
  };
}

export type Stats = ReturnType<typeof createStats>;
