/**
 * Failed verifications, rate-limited per client address and per payer
 * (VERIFY_FAILURES_PER_MINUTE). A correctly signed proof from a fresh,
 * unfunded key passes every local check and costs a facilitator `/verify`
 * (an RPC simulation) before it fails: one client could make the facilitator
 * do that hundreds of times a second. Past the limit, a client's or payer's
 * next proof is answered 429 without reaching the facilitator or the ledger.
 *
 * Sliding window: at most `perMinute` failures in any 60 s. A proof on its
 * way to the facilitator holds a slot until its answer is known (so 10,000
 * sent at once cost at most `perMinute` calls, not 10,000); a payment that
 * goes through gives its slot back. A funded buyer at another address shares
 * nothing with the flood. Memory is bounded: the oldest keys go first.
 */
const WINDOW_MS = 60_000;
/** Keys remembered at most (client addresses and payers together). */
const MAX_KEYS = 50_000;

export interface VerifySlot {
  /** The facilitator's answer is known: `failed` keeps the slot for the window, otherwise it is freed. */
  done(failed: boolean): void;
}

export type Reservation = { ok: true; slot: VerifySlot } | { ok: false; retryAfterSeconds: number };

export interface VerifyLimiterOptions {
  perMinute: number;
  now?: () => number;
}

interface Window {
  /** Times of recent failures, oldest first. */
  failures: number[];
  /** Proofs at the facilitator now. */
  inflight: number;
}

export function createVerifyLimiter(opts: VerifyLimiterOptions) {
  const now = opts.now ?? Date.now;
  const windows = new Map<string, Window>();

  function windowOf(key: string, at: number): Window {
    let w = windows.get(key);
    if (w) {
      windows.delete(key); // re-inserted below: the map's order is least recently used first
    } else {
      w = { failures: [], inflight: 0 };
      if (windows.size >= MAX_KEYS) {
        for (const [k, old] of windows) {
          if (old.inflight > 0) continue;
          windows.delete(k);
          if (windows.size < MAX_KEYS) break;
        }
      }
    }
    windows.set(key, w);
    while (w.failures.length > 0 && w.failures[0] <= at - WINDOW_MS) w.failures.shift();
    return w;
  }

  const keysOf = (client: string | undefined, payer: string | undefined) => {
    const keys: string[] = [];
    if (client) keys.push(`ip:${client}`);
    if (payer) keys.push(`payer:${payer.toLowerCase()}`);
    return keys;
  };

  /** Seconds until one of these windows has room, or 0 when all have. */
  function waitFor(ws: Window[], at: number): number {
    let retryAt = 0;
    for (const w of ws) {
      if (w.failures.length + w.inflight < opts.perMinute) continue;
      // Full: free again when the oldest failure leaves the window (or, with only proofs in flight, shortly).
      retryAt = Math.max(retryAt, w.failures.length > 0 ? w.failures[0] + WINDOW_MS : at + 1000);
    }
    return retryAt > 0 ? Math.max(1, Math.ceil((retryAt - at) / 1000)) : 0;
  }

  /**
   * Seconds to wait when this client or payer is over the limit already, or
   * 0. Asked for the client before the proof is decoded, and for the payer
   * before its signature is checked: past the limit, a flood costs a map
   * lookup per request, not an ECDSA recovery.
   */
  function blocked(client: string | undefined, payer?: string): number {
    const at = now();
    const ws: Window[] = [];
    for (const k of keysOf(client, payer)) {
      const w = windows.get(k);
      if (w) ws.push(w);
    }
    for (const w of ws) while (w.failures.length > 0 && w.failures[0] <= at - WINDOW_MS) w.failures.shift();
    return waitFor(ws, at);
  }

  /**
   * A slot for one proof of `payer` from `client` (undefined when unknown:
   * then only the payer counts), or how long to wait.
   */
  function reserve(client: string | undefined, payer: string): Reservation {
    const at = now();
    const ws = keysOf(client, payer).map((k) => windowOf(k, at));
    const wait = waitFor(ws, at);
    if (wait > 0) return { ok: false, retryAfterSeconds: wait };
    for (const w of ws) w.inflight++;
    let open = true;
    return {
      ok: true,
      slot: {
        done(failed) {
          if (!open) return;
          open = false;
          const t = now();
          for (const w of ws) {
            w.inflight--;
            if (failed) w.failures.push(t);
          }
        },
      },
    };
  }

  return { blocked, reserve, size: () => windows.size };
}

export type VerifyLimiter = ReturnType<typeof createVerifyLimiter>;
