/**
 * Webhook signatures, in the shape Stripe made familiar:
 *
 *   Cidgate-Signature: t=1732330000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd
 *
 * `v1` is the hex HMAC-SHA256, keyed with the webhook's secret, of
 * `${t}.${body}` (the raw body bytes as sent). The timestamp is inside the
 * signed text, so a captured delivery cannot be replayed later with a new
 * one; a receiver refuses a `t` older than its tolerance (5 minutes here).
 * docs/notifications.md shows the check in a few lines of any language.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "Cidgate-Signature";
export const DEFAULT_TOLERANCE_SECONDS = 300;

export function signatureOf(secret: string, timestamp: number, body: string): string {
  return createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
}

/** The header value for `body` signed at `timestamp` (unix seconds). */
export function signHeader(secret: string, body: string, timestamp = Math.floor(Date.now() / 1000)): string {
  return `t=${timestamp},v1=${signatureOf(secret, timestamp, body)}`;
}

/**
 * A receiver's check: true when `header` carries a `v1` that matches `body`
 * under `secret` and its `t` is within `toleranceSeconds` of `now`. Several
 * `v1` entries are allowed (one per secret while a secret is rotated).
 */
export function verifySignature(
  secret: string,
  body: string,
  header: string | null | undefined,
  opts: { toleranceSeconds?: number; now?: number } = {},
): boolean {
  if (!header) return false;
  let t: number | undefined;
  const v1: string[] = [];
  for (const part of header.split(",")) {
    const [k, v] = part.trim().split("=", 2);
    if (k === "t" && /^\d{1,12}$/.test(v ?? "")) t = Number(v);
    else if (k === "v1" && /^[0-9a-f]{64}$/.test(v ?? "")) v1.push(v);
  }
  if (t === undefined || v1.length === 0) return false;
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return false;
  const expected = Buffer.from(signatureOf(secret, t, body), "hex");
  return v1.some((s) => timingSafeEqual(Buffer.from(s, "hex"), expected));
}
