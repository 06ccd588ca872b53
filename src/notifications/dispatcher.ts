/**
 * Sends what the outbox holds: the only code that talks to webhook URLs.
 * It runs beside the server (started and stopped by server.ts), never on a
 * request's path: a payment is recorded and served whatever the receivers do.
 *
 * Each delivery is claimed (its due time pushed past the attempt), POSTed
 * with a fresh signature, and recorded: a 2xx is delivered; anything else
 * (an error status, a redirect, a timeout, a refused connection) is tried
 * again after the next step of `schedule`, and failed for good after the
 * last. Pending rows survive restarts: the first run after a start sends
 * whatever is due, so events queued while cidgate or a receiver was down go
 * out once both are back.
 */
import { SIGNATURE_HEADER, signHeader } from "./signature";
import type { Delivery, NotificationStore } from "./store";

/** Waits between attempts: about 45 hours in all, then the delivery is failed (and can be retried by hand). */
export const DEFAULT_SCHEDULE_MS = [10_000, 60_000, 300_000, 1_800_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000];

export interface DispatcherOptions {
  store: NotificationStore;
  log?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** Bound on one POST. */
  timeoutMs?: number;
  /** Wait before each retry; the delivery fails after the last one. */
  scheduleMs?: readonly number[];
  /** How often the outbox is looked at when nothing pokes it (other processes queue too). */
  pollMs?: number;
  /** Deliveries sent at once. */
  concurrency?: number;
  fetch?: typeof fetch;
  userAgent?: string;
}

/** An error's first line, without URLs (a receiver's URL may carry a token): safe for the log and the API. */
const safe = (error: unknown) =>
  (error instanceof Error ? error.message : String(error))
    .split("\n")[0]
    .replace(/\b\w+:\/\/\S+/g, "<url>")
    .slice(0, 200);

export function createDispatcher(opts: DispatcherOptions) {
  const { store } = opts;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const schedule = opts.scheduleMs ?? DEFAULT_SCHEDULE_MS;
  const pollMs = opts.pollMs ?? 5_000;
  const concurrency = opts.concurrency ?? 4;
  const doFetch = opts.fetch ?? fetch;
  const userAgent = opts.userAgent ?? "cidgate-webhooks/1";

  let stopped = true;
  let running: Promise<void> | undefined;
  let again = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** Moves when an event queued here asks for a run now: `arm` then leaves that run's timer alone. */
  let wakes = 0;
  let unsubscribe: (() => void) | undefined;

  /** One attempt at one claimed delivery; answers the row as recorded. */
  async function attempt(row: Delivery): Promise<Delivery | undefined> {
    const webhook = await store.getWebhook(row.webhookId);
    const at = () => new Date().toISOString();
    if (!webhook) return store.recordAttempt(row.id, { ok: false, status: null, error: "webhook deleted", at: at() });
    let status: number | null = null;
    let error: string | null = null;
    try {
      const response = await doFetch(webhook.url, {
        method: "POST",
        redirect: "manual", // a redirect is an answer to fix, not a place to send signed events
        signal: AbortSignal.timeout(timeoutMs),
        headers: {
          "content-type": "application/json",
          "user-agent": userAgent,
          [SIGNATURE_HEADER]: signHeader(webhook.secret, row.payload),
          "Cidgate-Event": row.eventType,
          "Cidgate-Event-Id": row.eventId,
          "Cidgate-Delivery": String(row.id),
        },
        body: row.payload,
      });
      status = response.status;
      await response.body?.cancel().catch(() => {});
      if (status < 200 || status > 299) error = `receiver answered ${status}`;
    } catch (e) {
      error = (e as Error)?.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : safe(e);
    }
    const ok = error === null;
    const wait = schedule[row.attempts];
    const recorded = await store.recordAttempt(row.id, {
      ok,
      status,
      error,
      at: at(),
      retryAt: ok || wait === undefined ? undefined : new Date(Date.now() + wait).toISOString(),
    });
    if (ok) opts.log?.info({ delivery: row.id, event: row.eventType, status }, "webhook delivered");
    else
      opts.log?.warn(
        { delivery: row.id, event: row.eventType, attempt: row.attempts + 1, reason: error, final: wait === undefined },
        "webhook not delivered",
      );
    return recorded;
  }

  const lease = () => new Date(Date.now() + timeoutMs + 30_000).toISOString();

  async function drain(): Promise<void> {
    do {
      again = false;
      for (;;) {
        const now = new Date().toISOString();
        const due = await store.due(now, concurrency * 4);
        if (due.length === 0) break;
        const claimed = (await Promise.all(due.map((d) => store.claim(d.id, now, lease())))).filter(
          (d): d is Delivery => !!d,
        );
        for (let i = 0; i < claimed.length; i += concurrency)
          await Promise.all(claimed.slice(i, i + concurrency).map(attempt));
        if (stopped) return;
      }
    } while (again && !stopped);
  }

  function run(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = drain()
      .catch((e) => opts.log?.warn({ reason: safe(e) }, "webhook dispatcher run failed"))
      .finally(() => {
        running = undefined;
        return arm().catch((e) => opts.log?.warn({ reason: safe(e) }, "webhook dispatcher run failed"));
      });
    return running;
  }

  /**
   * Sleeps until the next due delivery, or the poll interval, whichever is sooner. A database that
   * does not answer still gets the poll interval: without a timer the dispatcher would sleep until
   * this process queued an event, and other replicas' events and later retries would wait for good.
   */
  async function arm() {
    if (stopped) return;
    const woken = wakes;
    let next: string | undefined;
    try {
      next = await store.nextDue();
    } finally {
      // An event queued while nextDue was asked (its answer may predate the commit) keeps its run now.
      if (!stopped && wakes === woken) {
        clearTimeout(timer);
        const wait = next ? Math.max(0, Math.min(pollMs, Date.parse(next) - Date.now())) : pollMs;
        timer = setTimeout(run, wait);
      }
    }
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      unsubscribe = store.onQueued(() => {
        // After the caller's synchronous transaction has committed: never inside it.
        wakes++;
        clearTimeout(timer);
        timer = setTimeout(run, 0);
      });
      void run();
    },

    /** Sends one delivery now (the test endpoint), whatever its due time; answers it as recorded. */
    async sendNow(id: number): Promise<Delivery | undefined> {
      const row = await store.claim(id, "9999-12-31T23:59:59.999Z", lease());
      return row ? attempt(row) : store.getDelivery(id);
    },

    /** Stops polling and waits for attempts in flight to be recorded. */
    async stop() {
      stopped = true;
      clearTimeout(timer);
      unsubscribe?.();
      await running;
    },

    /** Resolves once nothing is due (tests). */
    async idle() {
      await run();
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
