/**
 * The webhooks and their outbox (webhook_deliveries): this store is both
 * tables' only writer. `emit` is what the rest of cidgate calls: one INSERT
 * per subscribed webhook, synchronous, on the caller's connection, so inside
 * the ledger's settle transaction the event is written with the payment or
 * not at all (exactly one event per settled payment, even across a crash).
 * Nothing is sent here: the dispatcher (dispatcher.ts) reads the outbox.
 */

import { and, desc, eq, like, lte, sql } from "drizzle-orm";
import type { Awaitable } from "../db/awaitable";
import type { Db } from "../db/client";
import { webhookDeliveries, webhooks } from "../db/schema";
import { keysetPage } from "../entitlements/filter";
import { type Attempt, attemptChanges, countsOf, deliveryWhere } from "./deliveries";
import { type EventEnvelope, type EventType, envelope, TEST_EVENT } from "./events";
import { DELETED, declared, planCounts, planFileWebhooks, REMOVED_FROM_FILE } from "./file-webhooks";
import { newWebhookRow, wants, webhookChanges } from "./webhook-rows";

export type Webhook = typeof webhooks.$inferSelect;
export type Delivery = typeof webhookDeliveries.$inferSelect;
export type DeliveryState = Delivery["state"];

/** A webhook as a pricing file declares it (notifications.webhooks.<key>). */
export interface DesiredWebhook {
  source: string;
  url: string;
  secret: string;
  events: EventType[];
  description: string | null;
  enabled: boolean;
}

export interface WebhookInput {
  url: string;
  secret?: string;
  events?: EventType[];
  description?: string | null;
  enabled?: boolean;
}

export interface DeliveryFilter {
  webhookId?: string;
  state?: DeliveryState;
  eventType?: string;
}

export const nowIso = () => new Date().toISOString();

/** Where a failure to queue an event is reported; never thrown into the caller's transaction. */
export interface NotificationsLog {
  error(obj: object, msg: string): void;
}

/** A failure to queue an event, logged: the stores have no logger of their own, so a JSON line on stderr, the error's name only. */
export function notQueued(log: NotificationsLog | undefined, type: string, error: unknown): void {
  const to = log ?? { error: (obj: object, msg: string) => console.error(JSON.stringify({ ...obj, msg })) };
  to.error({ level: "error", event: type, err: (error as Error).name }, "webhook event not queued");
}

export function createNotificationStore(db: Db, opts: { log?: NotificationsLog } = {}) {
  const p = sql.placeholder;
  const insertDelivery = db
    .insert(webhookDeliveries)
    .values({
      webhookId: p("webhookId"),
      eventId: p("eventId"),
      eventType: p("eventType"),
      payload: p("payload"),
      state: "pending",
      attempts: 0,
      nextAttemptAt: p("now"),
      createdAt: p("now"),
    })
    .onConflictDoNothing()
    .returning()
    .prepare();

  // The enabled webhooks, read once per change made through this store: an event costs no read
  // when nobody listens. Another process's webhook edits are seen after this one's next write
  // (webhooks are edited by the server: API and pricing reloads).
  let enabled: Webhook[] | undefined;
  const subscribers = (type: string) =>
    (enabled ??= db.select().from(webhooks).where(eq(webhooks.enabled, true)).all()).filter((w) => wants(w, type));
  const listeners = new Set<() => void>();
  const queued = () => {
    for (const l of listeners) l();
  };
  const changed = () => {
    enabled = undefined;
  };

  function queue(targets: Webhook[], event: EventEnvelope): Delivery[] {
    const payload = JSON.stringify(event);
    const now = nowIso();
    const rows: Delivery[] = [];
    for (const w of targets) {
      const row = insertDelivery.get({ webhookId: w.id, eventId: event.id, eventType: event.type, payload, now });
      if (row) rows.push(row);
    }
    if (rows.length) queued();
    return rows;
  }

  function getWebhook(id: string): Webhook | undefined {
    return db.select().from(webhooks).where(eq(webhooks.id, id)).get();
  }

  return {
    /**
     * Queues `type` for every enabled webhook that wants it. Synchronous: call
     * it inside the transaction of the change it reports. A failure is logged
     * and swallowed (SQLite undoes that one statement, not the transaction):
     * a webhook never costs a sale or a grant.
     */
    emit(type: EventType, data: Record<string, unknown>): void {
      try {
        const targets = subscribers(type);
        if (targets.length) queue(targets, envelope(type, data));
      } catch (error) {
        notQueued(opts.log, type, error);
      }
    },

    /** Queues the test event for one webhook (whatever its events and even when disabled). */
    queueTest(webhook: Webhook): Delivery {
      return queue(
        [webhook],
        envelope(TEST_EVENT, { webhook_id: webhook.id, message: "a test event from cidgate" }),
      )[0];
    },

    /** Called after events are queued (the dispatcher sends soon rather than at its next poll). */
    onQueued(listener: () => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    listWebhooks(): Webhook[] {
      return db.select().from(webhooks).orderBy(webhooks.createdAt, webhooks.id).all();
    },

    getWebhook,

    createWebhook(input: WebhookInput): Webhook {
      const row = db.insert(webhooks).values(newWebhookRow(input, nowIso())).returning().get();
      changed();
      return row;
    },

    updateWebhook(id: string, input: Partial<WebhookInput>): Webhook | undefined {
      const row = db.update(webhooks).set(webhookChanges(input, nowIso())).where(eq(webhooks.id, id)).returning().get();
      changed();
      return row;
    },

    /** Deletes the webhook; its deliveries stay in the log, and pending ones are no longer sent. */
    deleteWebhook(id: string): Webhook | undefined {
      const row = db.transaction((tx) => {
        const gone = tx.delete(webhooks).where(eq(webhooks.id, id)).returning().get();
        if (gone)
          tx.update(webhookDeliveries)
            .set({ state: "failed", lastError: DELETED })
            .where(and(eq(webhookDeliveries.webhookId, id), eq(webhookDeliveries.state, "pending")))
            .run();
        return gone;
      });
      changed();
      return row;
    },

    /**
     * Makes the file-declared webhooks those of `desired` (by source, so a
     * webhook keeps its id and its log across edits); API-made ones are left
     * alone. Answers what changed.
     */
    syncFiles(desired: readonly DesiredWebhook[]) {
      const result = db.transaction((tx) => {
        const now = nowIso();
        const plan = planFileWebhooks(tx.select().from(webhooks).where(like(webhooks.source, "file:%")).all(), desired);
        for (const d of plan.create)
          tx.insert(webhooks)
            .values({ ...d, id: `wh_${Bun.randomUUIDv7()}`, createdAt: now, updatedAt: now })
            .run();
        for (const u of plan.update) tx.update(webhooks).set(declared(u.to, now)).where(eq(webhooks.id, u.id)).run();
        for (const gone of plan.remove) {
          tx.delete(webhooks).where(eq(webhooks.id, gone.id)).run();
          tx.update(webhookDeliveries)
            .set({ state: "failed", lastError: REMOVED_FROM_FILE })
            .where(and(eq(webhookDeliveries.webhookId, gone.id), eq(webhookDeliveries.state, "pending")))
            .run();
        }
        return planCounts(plan);
      });
      if (result.created || result.updated || result.deleted) changed();
      return result;
    },

    /** Pending deliveries due at `now`, oldest first. */
    due(now: string, limit: number): Delivery[] {
      return db
        .select()
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.state, "pending"), lte(webhookDeliveries.nextAttemptAt, now)))
        .orderBy(webhookDeliveries.nextAttemptAt, webhookDeliveries.id)
        .limit(limit)
        .all();
    },

    /** The earliest time a pending delivery is due (to sleep until then), if any. */
    nextDue(): string | undefined {
      return db
        .select({ at: sql<string>`min(${webhookDeliveries.nextAttemptAt})` })
        .from(webhookDeliveries)
        .where(eq(webhookDeliveries.state, "pending"))
        .get()?.at;
    },

    /**
     * Takes a due delivery for one attempt: pushes its due time to `leaseUntil`
     * so no other run (or process) sends it meanwhile; if this process dies
     * mid-send, it is due again then (at-least-once, hence the event id).
     */
    claim(id: number, now: string, leaseUntil: string): Delivery | undefined {
      return db
        .update(webhookDeliveries)
        .set({ nextAttemptAt: leaseUntil })
        .where(
          and(
            eq(webhookDeliveries.id, id),
            eq(webhookDeliveries.state, "pending"),
            lte(webhookDeliveries.nextAttemptAt, now),
          ),
        )
        .returning()
        .get();
    },

    /** Records an attempt: delivered, or retried at `retryAt`, or failed for good (`retryAt` undefined). */
    recordAttempt(id: number, attempt: Attempt): Delivery | undefined {
      return db
        .update(webhookDeliveries)
        .set(attemptChanges(webhookDeliveries, attempt))
        .where(and(eq(webhookDeliveries.id, id), eq(webhookDeliveries.state, "pending")))
        .returning()
        .get();
    },

    /** Sends a delivery again as soon as possible (a failed one too): an operator's retry. */
    retry(id: number): Delivery | undefined {
      const row = db
        .update(webhookDeliveries)
        .set({ state: "pending", nextAttemptAt: nowIso() })
        .where(and(eq(webhookDeliveries.id, id), sql`${webhookDeliveries.state} != 'delivered'`))
        .returning()
        .get();
      if (row) queued();
      return row;
    },

    getDelivery(id: number): Delivery | undefined {
      return db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id)).get();
    },

    /** The delivery log, newest first, keyset-paged by id. */
    listDeliveries(f: DeliveryFilter, page: { limit: number; afterId?: number }) {
      const rows = db
        .select()
        .from(webhookDeliveries)
        .where(deliveryWhere(webhookDeliveries, f, page.afterId))
        .orderBy(desc(webhookDeliveries.id))
        .limit(page.limit + 1)
        .all();
      return keysetPage(rows, page.limit);
    },

    /** Deliveries per state (for the dashboard's attention list). */
    counts(): Record<DeliveryState, number> {
      return countsOf(
        db
          .select({ state: webhookDeliveries.state, n: sql<number>`count(*)` })
          .from(webhookDeliveries)
          .groupBy(webhookDeliveries.state)
          .all(),
      );
    },
  };
}

/** The SQLite store, synchronous; the app holds `NotificationStore`, which a PostgreSQL store implements too. */
export type SqliteNotificationStore = ReturnType<typeof createNotificationStore>;
export type NotificationStore = Awaitable<SqliteNotificationStore, "onQueued">;

/** What the ledger and the entitlements store call: only `emit`. */
export type Notify = Pick<NotificationStore, "emit">;
