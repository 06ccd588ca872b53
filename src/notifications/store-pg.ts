/**
 * The webhooks and their outbox on PostgreSQL: the same store as store.ts
 * (see there), answering with promises, for several replicas on one
 * database. Where it differs, and why:
 *
 * - `emit` is one INSERT ... SELECT over the enabled webhooks that want the
 *   event, through `pg.q()`: inside the settle transaction the event is
 *   written with the payment or not at all. It reads the webhooks in the same
 *   statement rather than from a per-process cache (as SQLite does), because
 *   a webhook made or disabled through one replica must get (or stop
 *   getting) every other replica's events at once; the cost is that one
 *   statement per event, also when nobody listens (p50 ~120 us with no
 *   webhook, ~200 us with two, against ~100 us for a SELECT 1, on the test
 *   harness's server on a loaded machine).
 * - A failed `emit` outside a transaction is logged and swallowed, as on
 *   SQLite. Inside one it is thrown: PostgreSQL aborts the whole transaction
 *   on a failed statement (SQLite undoes only that statement), so swallowing
 *   would only move the failure to the caller's next statement or its COMMIT
 *   (Bun's client refuses a COMMIT the server rolled back: tried), with a
 *   less telling error. Undoing just the INSERT would take a savepoint: two
 *   more round trips (~100 us each here) on every event of every sale,
 *   against failures that only a failing server produces (the INSERT has no
 *   foreign key and takes conflicts with ON CONFLICT), which fail the sale's
 *   own writes as well.
 * - `claim` is a conditional UPDATE (pending, due at `now`) ... RETURNING: two
 *   replicas claiming one delivery both try it, the second waits for the
 *   first's row lock, re-reads the row (now leased past `now`) and updates
 *   nothing, so one replica sends it, never two.
 * - `onQueued` stays in-process (the dispatcher of this replica sends soon);
 *   other replicas' dispatchers find the rows when they poll. Inside a
 *   transaction the listeners are told once it has committed
 *   (`pg.afterCommit`): told before, a dispatcher looked, found nothing yet
 *   and sent the rows only at its next poll, up to 5 s later.
 * - `syncFiles` takes a transaction-scoped advisory lock: replicas started
 *   together each reload their pricing files, and without the lock two of
 *   them would both find a declared webhook missing and both create it.
 */
import { and, asc, count, desc, eq, like, lte, min, sql } from "drizzle-orm";
import type { Async } from "../db/awaitable";
import type { Pg } from "../db/pg";
import { webhookDeliveries as deliveries, webhooks } from "../db/schema-pg";
import { keysetPage } from "../entitlements/filter";
import { attemptChanges, countsOf, deliveryWhere } from "./deliveries";
import { type EventEnvelope, envelope, TEST_EVENT } from "./events";
import { DELETED, declared, planCounts, planFileWebhooks, REMOVED_FROM_FILE } from "./file-webhooks";
import { type Delivery, type NotificationsLog, notQueued, nowIso, type SqliteNotificationStore } from "./store";
import { newWebhookRow, webhookChanges } from "./webhook-rows";

/** The advisory lock key of `syncFiles` (pg_advisory_xact_lock): the ASCII bytes of "cidgwhk\0". */
export const FILE_WEBHOOKS_LOCK_KEY = 0x6369646777686b00n;

/** `onQueued` subscribes in-process, synchronously, on either engine. */
export type PgNotificationStore = Omit<Async<SqliteNotificationStore>, "onQueued"> &
  Pick<SqliteNotificationStore, "onQueued">;

export function createPgNotificationStore(pg: Pg, opts: { log?: NotificationsLog } = {}): PgNotificationStore {
  const listeners = new Set<() => void>();
  const queued = () => pg.afterCommit(tell);
  const tell = () => {
    for (const l of listeners) l();
  };
  const first = <R>(rows: R[]) => rows[0] as R | undefined;

  async function queueFor(webhookId: string, event: EventEnvelope): Promise<Delivery | undefined> {
    const now = nowIso();
    const row = first(
      await pg
        .q()
        .insert(deliveries)
        .values({
          webhookId,
          eventId: event.id,
          eventType: event.type,
          payload: JSON.stringify(event),
          state: "pending",
          attempts: 0,
          nextAttemptAt: now,
          createdAt: now,
        })
        .onConflictDoNothing()
        .returning(),
    );
    if (row) queued();
    return row;
  }

  /** Fails the pending deliveries of a webhook that is gone (they are no longer sent; the log keeps them). */
  const failPending = (webhookId: string, why: string) =>
    pg
      .q()
      .update(deliveries)
      .set({ state: "failed", lastError: why })
      .where(and(eq(deliveries.webhookId, webhookId), eq(deliveries.state, "pending")));

  return {
    async emit(type, data) {
      const event = envelope(type, data);
      const now = nowIso();
      try {
        // In webhook creation order, as the SQLite store queues them.
        const rows = await pg.q().execute(sql`
          INSERT INTO ${deliveries} (webhook_id, event_id, event_type, payload, state, attempts, next_attempt_at, created_at)
          SELECT id, ${event.id}, ${type}, ${JSON.stringify(event)}, 'pending', 0, ${now}, ${now}
            FROM ${webhooks}
           WHERE enabled AND (json_array_length(events) = 0 OR events::jsonb @> jsonb_build_array(${type}::text))
           ORDER BY created_at, id
          ON CONFLICT DO NOTHING
          RETURNING 1`);
        if (rows.length) queued();
      } catch (error) {
        if (pg.q() !== pg.db) throw error; // in a transaction: see the top of this file
        notQueued(opts.log, type, error);
      }
    },

    async queueTest(webhook) {
      const event = envelope(TEST_EVENT, { webhook_id: webhook.id, message: "a test event from cidgate" });
      return (await queueFor(webhook.id, event))!;
    },

    onQueued(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    listWebhooks: () => pg.q().select().from(webhooks).orderBy(webhooks.createdAt, webhooks.id),

    getWebhook: async (id) => first(await pg.q().select().from(webhooks).where(eq(webhooks.id, id))),

    async createWebhook(input) {
      const [row] = await pg.q().insert(webhooks).values(newWebhookRow(input, nowIso())).returning();
      return row;
    },

    async updateWebhook(id, input) {
      return first(
        await pg.q().update(webhooks).set(webhookChanges(input, nowIso())).where(eq(webhooks.id, id)).returning(),
      );
    },

    deleteWebhook(id) {
      return pg.transaction(async () => {
        const gone = first(await pg.q().delete(webhooks).where(eq(webhooks.id, id)).returning());
        if (gone) await failPending(id, DELETED);
        return gone;
      });
    },

    syncFiles(desired) {
      return pg.transaction(async () => {
        await pg.q().execute(sql`SELECT pg_advisory_xact_lock(${FILE_WEBHOOKS_LOCK_KEY.toString()}::bigint)`);
        const now = nowIso();
        const current = await pg.q().select().from(webhooks).where(like(webhooks.source, "file:%"));
        const plan = planFileWebhooks(current, desired);
        if (plan.create.length)
          await pg
            .q()
            .insert(webhooks)
            .values(plan.create.map((d) => ({ ...d, id: `wh_${Bun.randomUUIDv7()}`, createdAt: now, updatedAt: now })));
        for (const u of plan.update)
          await pg.q().update(webhooks).set(declared(u.to, now)).where(eq(webhooks.id, u.id));
        for (const gone of plan.remove) {
          await pg.q().delete(webhooks).where(eq(webhooks.id, gone.id));
          await failPending(gone.id, REMOVED_FROM_FILE);
        }
        return planCounts(plan);
      });
    },

    due: (now, limit) =>
      pg
        .q()
        .select()
        .from(deliveries)
        .where(and(eq(deliveries.state, "pending"), lte(deliveries.nextAttemptAt, now)))
        .orderBy(asc(deliveries.nextAttemptAt), asc(deliveries.id))
        .limit(limit),

    async nextDue() {
      const [row] = await pg
        .q()
        .select({ at: min(deliveries.nextAttemptAt) })
        .from(deliveries)
        .where(eq(deliveries.state, "pending"));
      // SQLite's answer when nothing is pending is the row's null: the same here.
      return row?.at as string | undefined;
    },

    async claim(id, now, leaseUntil) {
      return first(
        await pg
          .q()
          .update(deliveries)
          .set({ nextAttemptAt: leaseUntil })
          .where(and(eq(deliveries.id, id), eq(deliveries.state, "pending"), lte(deliveries.nextAttemptAt, now)))
          .returning(),
      );
    },

    async recordAttempt(id, attempt) {
      return first(
        await pg
          .q()
          .update(deliveries)
          .set(attemptChanges(deliveries, attempt))
          .where(and(eq(deliveries.id, id), eq(deliveries.state, "pending")))
          .returning(),
      );
    },

    async retry(id) {
      const row = first(
        await pg
          .q()
          .update(deliveries)
          .set({ state: "pending", nextAttemptAt: nowIso() })
          .where(and(eq(deliveries.id, id), sql`${deliveries.state} != 'delivered'`))
          .returning(),
      );
      if (row) queued();
      return row;
    },

    getDelivery: async (id) => first(await pg.q().select().from(deliveries).where(eq(deliveries.id, id))),

    async listDeliveries(f, page) {
      const rows = await pg
        .q()
        .select()
        .from(deliveries)
        .where(deliveryWhere(deliveries, f, page.afterId))
        .orderBy(desc(deliveries.id))
        .limit(page.limit + 1);
      return keysetPage(rows, page.limit);
    },

    async counts() {
      return countsOf(
        await pg.q().select({ state: deliveries.state, n: count() }).from(deliveries).groupBy(deliveries.state),
      );
    },
  };
}
