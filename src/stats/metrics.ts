/**
 * GET /metrics in Prometheus' text format, through prom-client (its own
 * registry per app: two apps in one process never share counters).
 *
 * The per-request counts (requests, offers, proofs) are plain numbers
 * bumped on the request path and handed to prom-client only when scraped
 * (each metric's `collect`): a labelled `inc()` costs ~0.5-1 us, 5-10% of a
 * 402. Revenue and pending settlements are read from the ledger's rollup and
 * its partial index at scrape time (prom-client awaits each `collect`: on
 * PostgreSQL they are queries), so they are exact, survive restarts and, with
 * several replicas on one database, each replica reports the whole shop's.
 * docs/metrics.md lists every series.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Facilitator } from "../facilitator/types";
import type { FunnelCounters } from "./counters";
import type { StatsQueries } from "./queries";

/** Distinct route labels kept; past it, "other" (a scan of random paths must not grow the registry). */
const MAX_ROUTES = 200;

export type ProofOutcome =
  | "settled"
  | "served"
  | "refused"
  | "pending"
  | "unavailable"
  | "conflict"
  | "not_found"
  | "range_not_satisfiable"
  | "file_changed"
  | "too_many_failures"
  | "offer"
  | "error";

export function createMetrics(deps: { queries: StatsQueries; counters: FunnelCounters }) {
  const registry = new Registry();
  const byRoute = new Map<string, Float64Array>();
  const proofs = new Map<ProofOutcome, number>();

  new Counter({
    name: "cidgate_http_requests_total",
    help: "HTTP requests answered, by route and status",
    labelNames: ["route", "status"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [route, counts] of byRoute)
        for (let status = 0; status < counts.length; status++)
          if (counts[status] > 0) this.inc({ route, status: String(status) }, counts[status]);
    },
  });
  new Counter({
    name: "cidgate_offers_total",
    help: "402 answers that named a price (GET), since start",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(deps.counters.totals().offers);
    },
  });
  new Counter({
    name: "cidgate_proofs_total",
    help: "payments presented (GET), by outcome, since start",
    labelNames: ["outcome"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [outcome, n] of proofs) this.inc({ outcome }, n);
    },
  });
  const facilitatorSeconds = new Histogram({
    name: "cidgate_facilitator_duration_seconds",
    help: "facilitator call latency, by call (verify, settle) and result (ok, error)",
    labelNames: ["call", "result"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const facilitatorErrors = new Counter({
    name: "cidgate_facilitator_errors_total",
    help: "facilitator calls that got no valid answer (down, timed out, 5xx, malformed), by call",
    labelNames: ["call"],
    registers: [registry],
  });
  new Counter({
    name: "cidgate_revenue_base_units_total",
    help: "settled revenue in the asset's smallest unit (USDC: 1e6 = $1), by network and asset, from the ledger",
    labelNames: ["network", "asset"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await deps.queries.revenue()) this.inc({ network: r.network, asset: r.asset }, Number(r.amount));
    },
  });
  new Counter({
    name: "cidgate_sales_total",
    help: "settled payments, by network and asset, from the ledger",
    labelNames: ["network", "asset"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await deps.queries.revenue()) this.inc({ network: r.network, asset: r.asset }, r.sales);
    },
  });
  new Gauge({
    name: "cidgate_pending_settlements",
    help: "payments pending: a settlement running, or sent and unconfirmed",
    registers: [registry],
    async collect() {
      this.set(await deps.queries.pending());
    },
  });

  return {
    registry,
    contentType: registry.contentType,
    text: () => registry.metrics(),

    /** A counter of answers for one route label: call it with each answer's status (a few ns). */
    requestCounter(route: string): (status: number) => void {
      let counts = byRoute.get(route);
      if (!counts) {
        if (byRoute.size >= MAX_ROUTES) return route === "other" ? () => {} : this.requestCounter("other");
        byRoute.set(route, (counts = new Float64Array(600)));
      }
      const c = counts;
      return (status) => {
        c[status >= 0 && status < 600 ? status : 0]++;
      };
    },

    proof(outcome: ProofOutcome): void {
      proofs.set(outcome, (proofs.get(outcome) ?? 0) + 1);
    },

    /** The facilitator with each verify and settle timed and its failures counted. */
    instrument(facilitator: Facilitator): Facilitator {
      const timed =
        <A, R>(call: "verify" | "settle", fn: (a: A) => Promise<R>) =>
        async (a: A): Promise<R> => {
          const end = facilitatorSeconds.startTimer({ call });
          try {
            const answer = await fn(a);
            end({ result: "ok" });
            return answer;
          } catch (error) {
            end({ result: "error" });
            facilitatorErrors.inc({ call });
            throw error;
          }
        };
      return {
        // Kept: the built-in facilitator's answer is its own chain receipt (ledger/chain-check.ts skips the check).
        confirmsOnChain: facilitator.confirmsOnChain,
        verify: timed("verify", (r) => facilitator.verify(r)),
        settle: timed("settle", (r) => facilitator.settle(r)),
        supported: () => facilitator.supported(),
      };
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
