/**
 * What a payment for an instruction buys beyond the proof's own window: the
 * instruction's access policy (`access`) and what the entitlement covers
 * (`access_scope`). Parsed the same way from the API, the pricing YAML and
 * the CLI, so all three accept and refuse the same spellings.
 */

export type AccessPolicy = { kind: "forever" } | { kind: "once" } | { kind: "for"; seconds: number };

/** "cid": the CID paid for; "instruction": every CID of the instruction it was paid under. */
export type AccessScope = "cid" | "instruction";

export const ACCESS_SCOPES: readonly AccessScope[] = ["cid", "instruction"];

/** A file bought is owned, and only that file: the defaults when an instruction says nothing. */
export const DEFAULT_ACCESS = "forever";
export const DEFAULT_ACCESS_SCOPE: AccessScope = "cid";

/** Shown wherever a policy is refused, so the API, YAML and CLI say the same thing. */
export const ACCESS_RULE = 'must be "forever", "once", or a whole number with a unit m, h, d or w (e.g. "30d", "12h")';

const UNIT_SECONDS: Record<string, number> = { m: 60, h: 3600, d: 86_400, w: 604_800 };

// At most 6 digits: a million weeks is already past any expiry a JS number or SQLite needs to hold.
const DURATION = /^([0-9]{1,6})([mhdw])$/;

/**
 * The policy a text names, or undefined. A bare number is refused (minutes or
 * days? a buyer's access should not hinge on a guess), and so is a zero
 * duration (that is `once`, said plainly).
 */
export function parseAccessPolicy(text: string): AccessPolicy | undefined {
  if (text === "forever") return { kind: "forever" };
  if (text === "once") return { kind: "once" };
  const m = DURATION.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  if (n === 0) return undefined;
  return { kind: "for", seconds: n * UNIT_SECONDS[m[2]] };
}

export function isAccessScope(text: string): text is AccessScope {
  return (ACCESS_SCOPES as readonly string[]).includes(text);
}

/** Unix seconds an entitlement granted at `nowSeconds` ends, null for never; undefined for `once` (none is granted). */
export function expiryOf(policy: AccessPolicy, nowSeconds: number): number | null | undefined {
  if (policy.kind === "once") return undefined;
  if (policy.kind === "forever") return null;
  return nowSeconds + policy.seconds;
}
