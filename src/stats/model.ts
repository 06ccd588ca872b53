/**
 * Wire shapes of the shop's statistics, declared once (TypeBox): Elysia
 * validates queries with them, OpenAPI documents them, the dashboard reads
 * them, types derive.
 *
 * GET /v3/x402/stats            revenue, sales, offers, proofs and conversion per time bucket
 * GET /v3/x402/stats/breakdown  the same per CID or per instruction (the funnel table), with a series per row
 *
 * Words (docs/api.md says the same):
 * - offer: a 402 answer that named a price for a CID (a buyer was shown it);
 * - proof: a request that presented a payment for a CID, whatever became of it;
 * - sale: a payment settled (a pending or failed one is no sale);
 * - revenue: settled amounts, per network and asset, in the asset's smallest
 *   unit (`amount`) and in US dollars (`usd`, exact decimal string: every
 *   asset cidgate sells for is USDC, 6 decimals, 1 USDC = $1);
 * - conversion: sales / offers (null when there were no offers). It can pass 1:
 *   a client that pays without asking first makes a sale without an offer.
 * Times are UTC. A bucket holds events from `start` (inclusive) to the next
 * bucket's start; weeks start on Monday. Sales and revenue count in the bucket
 * of the payment's creation (when the proof came), offers and proofs in the
 * bucket in which they happened.
 */

import { type SchemaOptions, type Static, Type as T } from "@sinclair/typebox";
import { Limit } from "../http/paging";

export const BUCKETS = ["hour", "day", "week", "month"] as const;
export type Bucket = (typeof BUCKETS)[number];
const BucketUnion = (options?: SchemaOptions) =>
  T.Union([T.Literal("hour"), T.Literal("day"), T.Literal("week"), T.Literal("month")], options);

/** At most this many buckets per answer (a year of days; a month of hours is 744). */
export const MAX_BUCKETS = 1000;

export const BREAKDOWN_LIMIT = { max: 1000, fallback: 50 } as const;

const IsoTime = (description: string) =>
  T.String({ format: "date-time", description, error: "must be an ISO 8601 date-time" });

const StatsFilter = {
  from: T.Optional(
    IsoTime(
      "start (ISO 8601), rounded down to its bucket's start; default: `to` minus 48 hours, 30 days, 12 weeks or 12 months by bucket",
    ),
  ),
  to: T.Optional(IsoTime("end (ISO 8601, exclusive), rounded up to a bucket's start; default: now")),
  bucket: T.Optional(
    BucketUnion({
      description: "hour, day (default), week (from Monday) or month; UTC",
      error: "must be hour, day, week or month",
    }),
  ),
  cid: T.Optional(T.String({ description: "only this CID (any spelling)" })),
  instruction: T.Optional(T.String({ description: "only CIDs sold under this payment instruction id" })),
};

export const StatsQuery = T.Object(StatsFilter);
export type StatsQuery = Static<typeof StatsQuery>;

/** Settled revenue of one network and asset. */
export const Revenue = T.Object({
  network: T.String({ description: "base or base-sepolia" }),
  asset: T.String({ description: "token contract (USDC)" }),
  amount: T.String({ description: "settled, in the asset's smallest unit" }),
  usd: T.String({ description: 'the same in US dollars, exact decimal string ("0.58")' }),
  sales: T.Integer({ description: "settled payments" }),
});
export type Revenue = Static<typeof Revenue>;

/** The funnel and the money of one bucket, one row or the whole range. */
export const Figures = T.Object({
  offers: T.Integer({ description: "402 answers that named a price" }),
  proofs: T.Integer({ description: "payments presented, whatever their outcome" }),
  sales: T.Integer({ description: "payments settled (every network)" }),
  conversion: T.Union([T.Number(), T.Null()], { description: "sales / offers; null without offers" }),
  revenue: T.Array(Revenue, { description: "per network and asset, sorted by network then asset" }),
});
export type Figures = Static<typeof Figures>;

export const StatsBucket = T.Composite([T.Object({ start: T.String({ format: "date-time" }) }), Figures]);
export type StatsBucket = Static<typeof StatsBucket>;

export const StatsResponse = T.Object({
  data: T.Object({
    from: T.String({ format: "date-time", description: "the first bucket's start" }),
    to: T.String({ format: "date-time", description: "the end of the last bucket (exclusive)" }),
    bucket: BucketUnion(),
    buckets: T.Array(StatsBucket, { description: "every bucket from `from` to `to`, oldest first, empty ones too" }),
    totals: Figures,
  }),
});
export type StatsResponse = Static<typeof StatsResponse>;

export const BREAKDOWN_SORTS = ["revenue", "sales", "offers", "proofs", "conversion"] as const;
const SortUnion = (options?: SchemaOptions) =>
  T.Union(
    [T.Literal("revenue"), T.Literal("sales"), T.Literal("offers"), T.Literal("proofs"), T.Literal("conversion")],
    options,
  );

export const BreakdownQuery = T.Object({
  ...StatsFilter,
  by: T.Optional(
    T.Union([T.Literal("cid"), T.Literal("instruction")], {
      description: "one row per CID (default) or per payment instruction",
      error: "must be cid or instruction",
    }),
  ),
  sort: T.Optional(
    SortUnion({
      description: "rows with the most of this first (revenue: dollars over every network); default revenue",
      error: `must be one of ${BREAKDOWN_SORTS.join(", ")}`,
    }),
  ),
  limit: T.Optional(Limit(BREAKDOWN_LIMIT)),
});
export type BreakdownQuery = Static<typeof BreakdownQuery>;

export const BreakdownRow = T.Composite([
  T.Object({
    key: T.String({ description: "the CID, or the payment instruction id" }),
    name: T.Optional(T.String({ description: "the instruction's name (by=instruction)" })),
    path: T.Optional(
      T.String({ description: "a file with this CID in the content folder, when one is known (by=cid)" }),
    ),
    series: T.Array(T.Integer(), {
      description: "sales per bucket, aligned with `starts` (a sparkline)",
    }),
  }),
  Figures,
]);
export type BreakdownRow = Static<typeof BreakdownRow>;

export const BreakdownResponse = T.Object({
  data: T.Object({
    from: T.String({ format: "date-time" }),
    to: T.String({ format: "date-time" }),
    bucket: BucketUnion(),
    by: T.Union([T.Literal("cid"), T.Literal("instruction")]),
    starts: T.Array(T.String({ format: "date-time" }), { description: "the buckets' starts, oldest first" }),
    rows: T.Array(BreakdownRow, { description: "at most `limit` rows, most first by `sort`" }),
  }),
});
export type BreakdownResponse = Static<typeof BreakdownResponse>;
