/** Paged lists (instructions, CIDs, payments, entitlements): one `limit`, one page token, one rule. */
import { t as T } from "elysia";
import { invalidInput } from "./errors";

/** The `limit` query parameter's model. */
export const Limit = ({ max, fallback }: { max: number; fallback: number }) =>
  T.String({
    pattern: "^[0-9]{1,9}$",
    description: `page size, 1 to ${max} (default ${fallback})`,
    error: `must be a whole number from 1 to ${max}`,
  });

/** The `pageToken` query parameter's model. */
export const PageToken = T.String({
  description: "next_page_token of the previous page (opaque)",
  error: "is not a valid page token",
});

/** `next_page_token` in a page's answer. */
export const NextPageToken = T.Optional(
  T.String({ description: "pass as pageToken for the next page; absent on the last page" }),
);

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
