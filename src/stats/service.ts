/**
 * The statistics of one app, put together: the offer and proof counters
 * (flushed every few seconds, and at stop), the reads, the report behind
 * GET /v3/x402/stats and the Prometheus metrics. Made once by the
 * composition root (app.ts) over the app's database, SQLite or PostgreSQL;
 * the server starts its flushing and stops it.
 */
import type { MaybePromise } from "../db/awaitable";
import { type Database, isPg } from "../db/database";
import { createFunnelCounters, type FunnelCounters } from "./counters";
import { createPgFunnelCounters } from "./counters-pg";
import { createMetrics } from "./metrics";
import { createPgStatsQueries, createStatsQueries, type StatsQueries } from "./queries";
import { createReport, type ReportDeps } from "./report";

export function createStats(
  database: Database,
  options: { flushIntervalMs?: number } & Pick<ReportDeps, "instructionName" | "pathsOf"> = {},
) {
  const counters: FunnelCounters = isPg(database)
    ? createPgFunnelCounters(database, options)
    : createFunnelCounters(database.sqlite, options);
  const queries: StatsQueries = isPg(database) ? createPgStatsQueries(database) : createStatsQueries(database.sqlite);
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
    /** Writes every count left (a clean stop loses none): at once on SQLite, a promise on PostgreSQL. */
    stop: (): MaybePromise<unknown> => counters.stop(),
  };
}

export type Stats = ReturnType<typeof createStats>;
