/**
 * Time buckets of the statistics, UTC: hours, days, weeks from Monday,
 * months. The rollups are kept per hour ("YYYY-MM-DDTHH", the first 13
 * characters of an ISO time), and every bucket is a whole number of hours,
 * so a bucket's figures are sums of hourly rows, never a guess.
 */
import type { Bucket } from "./model";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The hour key of a time: what the rollup tables are keyed by. */
export const hourKey = (ms: number) => new Date(ms).toISOString().slice(0, 13);

/** The start of an hour key, in ms. */
export const hourStart = (key: string) => Date.parse(`${key}:00:00.000Z`);

/** The start of the bucket holding `ms`. */
export function floorBucket(ms: number, bucket: Bucket): number {
  const d = new Date(ms);
  switch (bucket) {
    case "hour":
      return Math.floor(ms / HOUR) * HOUR;
    case "day":
      return Math.floor(ms / DAY) * DAY;
    case "week": {
      const day = Math.floor(ms / DAY) * DAY;
      // getUTCDay: Sunday 0 ... Saturday 6; weeks start on Monday.
      return day - ((d.getUTCDay() + 6) % 7) * DAY;
    }
    case "month":
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  }
}

/** The start of the bucket after the one starting at `start`. */
export function nextBucket(start: number, bucket: Bucket): number {
  switch (bucket) {
    case "hour":
      return start + HOUR;
    case "day":
      return start + DAY;
    case "week":
      return start + 7 * DAY;
    case "month": {
      const d = new Date(start);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
  }
}

/** `to` rounded up to a bucket start (a `to` already on one stays). */
export function ceilBucket(ms: number, bucket: Bucket): number {
  const start = floorBucket(ms, bucket);
  return start === ms ? ms : nextBucket(start, bucket);
}

/** How far back `from` goes when not given: a screenful of buckets. */
export function defaultFrom(to: number, bucket: Bucket): number {
  switch (bucket) {
    case "hour":
      return to - 48 * HOUR;
    case "day":
      return to - 30 * DAY;
    case "week":
      return to - 12 * 7 * DAY;
    case "month": {
      const d = new Date(to);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 12, d.getUTCDate(), d.getUTCHours());
    }
  }
}

/** The bucket starts from `from` (a bucket start) to `to` (exclusive), at most `max` of them; undefined past it. */
export function bucketStarts(from: number, to: number, bucket: Bucket, max: number): number[] | undefined {
  const starts: number[] = [];
  for (let s = from; s < to; s = nextBucket(s, bucket)) {
    if (starts.length === max) return undefined;
    starts.push(s);
  }
  return starts;
}

/** A US-dollar string for an amount of USDC's smallest unit (6 decimals): "0.58", "12.00", "0.000001". */
export function usd(amount: bigint): string {
  const negative = amount < 0n;
  const abs = negative ? -amount : amount;
  const whole = abs / 1_000_000n;
  let fraction = (abs % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  if (fraction.length < 2) fraction = fraction.padEnd(2, "0");
  return `${negative ? "-" : ""}${whole}.${fraction}`;
}
