import { invalidInput } from "./errors";

/**
 * The `limit` query parameter of a paged list: absent means `fallback`,
 * anything but a whole number from 1 to `max` is a 400 naming the field.
 */
export function parseLimit(text: string | undefined, { max, fallback }: { max: number; fallback: number }): number {
  if (text === undefined) return fallback;
  const n = /^[0-9]{1,9}$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= 1 && n <= max))
    throw invalidInput([{ path: "limit", message: `must be a whole number from 1 to ${max}` }]);
  return n;
}
