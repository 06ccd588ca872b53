/**
 * The webhooks and their outbox (notifications/store.ts and store-pg.ts) on
 * both engines: which webhooks an event is queued for, in the caller's
 * transaction; the dispatcher's claim, attempt and retry; the delivery log;
 * the pricing files' webhooks. Across connections (other processes, other
 * replicas): a due delivery is claimed by one of them, never two, and
 * replicas syncing the same files make each declared webhook once.
 */
import { afterAll, afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MaybePromise } from "../../src/db/awaitable";
import { openDb } from "../../src/db/client";
import { openPg } from "../../src/db/pg";
import type { EventType } from "../../src/notifications/events";
import { createNotificationStore, type DesiredWebhook, type NotificationStore } from "../../src/notifications/store";
import { createPgNotificationStore } from "../../src/notifications/store-pg";
import { ENGINES, type Engine } from "../support/engines";
import { createTestDatabase, pgAvailable } from "../support/postgres";

const skip = { sqlite: false, postgres: !(await pgAvailable("notification store")) };
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Connection {
  store: NotificationStore;
  /** `fn` in one transaction of this connection, as the settler runs its writes. */
  transaction<T>(fn: () => MaybePromise<T>): Promise<T>;
  close(): Promise<void>;
}

/** One database that several connections open (processes sharing a file, replicas sharing a server). */
async function shared(engine: Engine): Promise<() => Promise<Connection>> {
  if (engine === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "cidgate-notifications-"));
    dirs.push(dir);
    return async () => {
      const db = openDb(join(dir, "db.sqlite"));
      return {
        store: createNotificationStore(db),
        transaction: async (fn) =>
          db.sqlite.transaction(() => {
            const out = fn();
            if (out instanceof Promise) throw new Error("a SQLite transaction's callback must not await");
            return out;
          })(),
        close: async () => db.sqlite.close(),
      };
    };
  }
  const url = await createTestDatabase();
  return async () => {
    const pg = await openPg(url);
    return {
      store: createPgNotificationStore(pg),
      transaction: (fn) => pg.transaction(async () => fn()),
      close: () => pg.close(),
    };
  };
}

const PAST = "2000-01-01T00:00:00.000Z";
const FUTURE = "2500-01-01T00:00:00.000Z";
/** A lease past FUTURE: a claimed delivery is not due again at FUTURE. */
const LEASE = "2998-01-01T00:00:00.000Z";
const file = (key: string, over: Partial<DesiredWebhook> = {}): DesiredWebhook => ({
  source: `file:pricing.yaml#${key}`,
  url: `https://example.test/${key}`,
  secret: `whsec_${key.padEnd(32, "x")}`,
  events: [],
  description: null,
  enabled: true,
  ...over,
});

describe.each(ENGINES)("%s", (engine) => {
  describe.skipIf(skip[engine])("notification store", () => {
    const open: Connection[] = [];
    let connect: () => Promise<Connection>;
    let c: Connection;
    let store: NotificationStore;
    // A long bound: the first test of the process starts the PostgreSQL server, and bun kills what a
    // timed-out hook spawned.
    beforeEach(async () => {
      const make = await shared(engine);
      connect = async () => {
        const made = await make();
        open.push(made);
        return made;
      };
      c = await connect();
      store = c.store;
    }, 60_000);
    afterEach(async () => {
      for (const o of open.splice(0)) await o.close();
    });

    const types = async (webhookId: string) =>
      (await store.listDeliveries({ webhookId }, { limit: 100 })).items.map((d) => d.eventType);

    test("webhooks: made with a secret, listed in creation order, edited, deleted (its pending deliveries failed)", async () => {
      const a = await store.createWebhook({ url: "https://example.test/a" });
      expect(a).toMatchObject({ url: "https://example.test/a", events: [], enabled: true, source: "api" });
      expect(a.id).toMatch(/^wh_/);
      expect(a.secret).toMatch(/^whsec_/);
      const b = await store.createWebhook({
        url: "https://example.test/b",
        secret: "whsec_given",
        events: ["payment.settled"],
        description: "ops",
        enabled: false,
      });
      expect((await store.listWebhooks()).map((w) => w.id)).toEqual([a.id, b.id]);
      expect(await store.getWebhook(b.id)).toEqual(b);
      const edited = (await store.updateWebhook(b.id, { enabled: true, events: ["entitlement.granted"] }))!;
      expect(edited).toMatchObject({ secret: "whsec_given", description: "ops", enabled: true });
      expect(edited.events).toEqual(["entitlement.granted"]);
      expect(await store.updateWebhook("wh_none", { enabled: false })).toBeUndefined();

      await store.emit("payment.settled", { n: 1 });
      const [pending] = (await store.listDeliveries({ webhookId: a.id }, { limit: 10 })).items;
      expect((await store.deleteWebhook(a.id))?.id).toBe(a.id);
      expect(await store.getWebhook(a.id)).toBeUndefined();
      expect(await store.getDelivery(pending.id)).toMatchObject({ state: "failed", lastError: "webhook deleted" });
      expect(await store.deleteWebhook(a.id)).toBeUndefined();
    });

    test("emit queues the event for each enabled webhook that wants it, one event id, the envelope as the body", async () => {
      const all = await store.createWebhook({ url: "https://example.test/all" });
      const settled = await store.createWebhook({ url: "https://example.test/s", events: ["payment.settled"] });
      const off = await store.createWebhook({ url: "https://example.test/off", enabled: false });
      await store.emit("payment.settled", { payment_id: 7 });
      await store.emit("entitlement.granted", { entitlement_id: 3 });
      expect(await types(all.id)).toEqual(["entitlement.granted", "payment.settled"]);
      expect(await types(settled.id)).toEqual(["payment.settled"]);
      expect(await types(off.id)).toEqual([]);
      const [one] = (await store.listDeliveries({ webhookId: all.id, eventType: "payment.settled" }, { limit: 1 }))
        .items;
      const [two] = (await store.listDeliveries({ webhookId: settled.id }, { limit: 1 })).items;
      expect(one.eventId).toBe(two.eventId);
      expect(one).toMatchObject({ state: "pending", attempts: 0, lastStatus: null, deliveredAt: null });
      const body = JSON.parse(one.payload);
      expect(body).toMatchObject({ id: one.eventId, type: "payment.settled", data: { payment_id: 7 } });
      expect(Object.keys(body)).toEqual(["id", "type", "created_at", "data"]);
      expect(await store.counts()).toEqual({ pending: 3, delivered: 0, failed: 0 });
    });

    test("emit joins the caller's transaction: rolled back with it, nothing queued", async () => {
      const hook = await store.createWebhook({ url: "https://example.test/a" });
      await expect(
        c.transaction(() => {
          const emitted = store.emit("payment.settled", { payment_id: 1 });
          const fail = () => {
            throw new Error("settle failed");
          };
          return emitted instanceof Promise ? emitted.then(fail) : fail();
        }),
      ).rejects.toThrow("settle failed");
      expect(await types(hook.id)).toEqual([]);
      await c.transaction(() => store.emit("payment.settled", { payment_id: 2 }));
      expect(await types(hook.id)).toEqual(["payment.settled"]);
    });

    test("onQueued: told when events are queued or retried, not when nobody listens; unsubscribed, not told", async () => {
      let told = 0;
      const unsubscribe = store.onQueued(() => told++);
      await store.emit("payment.settled", {});
      expect(told).toBe(0);
      const hook = await store.createWebhook({ url: "https://example.test/a", events: ["entitlement.revoked"] });
      await store.emit("payment.settled", {});
      expect(told).toBe(0);
      await store.emit("entitlement.revoked", {});
      expect(told).toBe(1);
      const test = await store.queueTest(hook);
      expect(test).toMatchObject({ webhookId: hook.id, eventType: "webhook.test", state: "pending" });
      expect(JSON.parse(test.payload).data).toEqual({ webhook_id: hook.id, message: "a test event from cidgate" });
      expect(told).toBe(2);
      unsubscribe();
      await store.emit("entitlement.revoked", {});
      expect(told).toBe(2);
    });

    test("due, claim, attempts: delivered, retried later, failed for good; an operator's retry; nextDue", async () => {
      const hook = await store.createWebhook({ url: "https://example.test/a" });
      expect(await store.nextDue()).toBeFalsy();
      await store.emit("payment.settled", { n: 1 });
      await store.emit("payment.settled", { n: 2 });
      const due = await store.due(FUTURE, 10);
      expect(due.map((d) => JSON.parse(d.payload).data.n)).toEqual([1, 2]);
      expect(await store.due(PAST, 10)).toEqual([]);
      expect(await store.due(FUTURE, 1)).toHaveLength(1);
      expect(await store.nextDue()).toBe(due[0].nextAttemptAt);

      const [first, second] = due;
      const claimed = (await store.claim(first.id, FUTURE, LEASE))!;
      expect(claimed.nextAttemptAt).toBe(LEASE);
      expect(await store.claim(first.id, FUTURE, LEASE)).toBeUndefined(); // leased: not due before the lease ends
      expect((await store.due(FUTURE, 10)).map((d) => d.id)).toEqual([second.id]);

      const delivered = (await store.recordAttempt(first.id, { ok: true, status: 204, error: null, at: FUTURE }))!;
      expect(delivered).toMatchObject({ state: "delivered", attempts: 1, lastStatus: 204, deliveredAt: FUTURE });
      expect(await store.recordAttempt(first.id, { ok: true, status: 200, error: null, at: FUTURE })).toBeUndefined();

      const retryAt = "2100-01-01T00:00:00.000Z";
      const again = await store.recordAttempt(second.id, {
        ok: false,
        status: 503,
        error: "receiver answered 503",
        at: PAST,
        retryAt,
      });
      expect(again).toMatchObject({ state: "pending", attempts: 1, nextAttemptAt: retryAt, lastStatus: 503 });
      const failed = await store.recordAttempt(second.id, { ok: false, status: null, error: "refused", at: PAST });
      expect(failed).toMatchObject({ state: "failed", attempts: 2, lastError: "refused", lastStatus: null });
      expect(await store.nextDue()).toBeFalsy();
      expect(await store.counts()).toEqual({ pending: 0, delivered: 1, failed: 1 });

      const retried = (await store.retry(second.id))!;
      expect(retried.state).toBe("pending");
      expect(retried.nextAttemptAt <= new Date().toISOString()).toBe(true);
      expect(await store.retry(first.id)).toBeUndefined(); // delivered: not sent again
      expect(await store.retry(123456)).toBeUndefined();
      expect((await store.listDeliveries({ state: "pending" }, { limit: 10 })).items.map((d) => d.id)).toEqual([
        second.id,
      ]);
      expect(hook.id).toBe(retried.webhookId);
    });

    test("the delivery log: newest first, filters, keyset pages", async () => {
      const a = await store.createWebhook({ url: "https://example.test/a" });
      const b = await store.createWebhook({ url: "https://example.test/b", events: ["entitlement.granted"] });
      const kinds: EventType[] = ["payment.settled", "entitlement.granted", "payment.settled"];
      for (const k of kinds) await store.emit(k, {});
      const all = (await store.listDeliveries({}, { limit: 100 })).items;
      expect(all.map((d) => d.id)).toEqual([...all.map((d) => d.id)].sort((x, y) => y - x));
      expect(all).toHaveLength(4);
      expect((await store.listDeliveries({ webhookId: b.id }, { limit: 100 })).items).toHaveLength(1);
      expect((await store.listDeliveries({ eventType: "payment.settled" }, { limit: 100 })).items).toHaveLength(2);
      expect((await store.listDeliveries({ state: "failed" }, { limit: 100 })).items).toHaveLength(0);
      const first = await store.listDeliveries({ webhookId: a.id }, { limit: 2 });
      expect(first.items).toHaveLength(2);
      expect(first.nextAfterId).toBe(first.items[1].id);
      const second = await store.listDeliveries({ webhookId: a.id }, { limit: 2, afterId: first.nextAfterId });
      expect(second.items).toHaveLength(1);
      expect(second.nextAfterId).toBeUndefined();
    });

    test("syncFiles: creates, updates in place (same id), deletes declared webhooks; API ones untouched; again: nothing", async () => {
      const api = await store.createWebhook({ url: "https://example.test/api" });
      expect(await store.syncFiles([file("one"), file("two")])).toEqual({ created: 2, updated: 0, deleted: 0 });
      expect(await store.syncFiles([file("one"), file("two")])).toEqual({ created: 0, updated: 0, deleted: 0 });
      const before = await store.listWebhooks();
      const one = before.find((w) => w.source === file("one").source)!;
      const two = before.find((w) => w.source === file("two").source)!;
      expect(one).toMatchObject({ url: "https://example.test/one", enabled: true, events: [] });

      await store.emit("payment.settled", {});
      const changed = file("one", { events: ["payment.settled"], enabled: false, description: "now off" });
      expect(await store.syncFiles([changed])).toEqual({ created: 0, updated: 1, deleted: 1 });
      const after = await store.listWebhooks();
      expect(after.map((w) => w.id)).toEqual([api.id, one.id]);
      expect(after[1]).toMatchObject({ events: ["payment.settled"], enabled: false, description: "now off" });
      const [gone] = (await store.listDeliveries({ webhookId: two.id }, { limit: 1 })).items;
      expect(gone).toMatchObject({ state: "failed", lastError: "webhook removed from its pricing file" });
      const [kept] = (await store.listDeliveries({ webhookId: one.id }, { limit: 1 })).items;
      expect(kept.state).toBe("pending");
    });

    test("two connections claiming the same due delivery at once: exactly one gets it, 20 times over", async () => {
      const other = (await connect()).store;
      await store.createWebhook({ url: "https://example.test/a" });
      for (let round = 0; round < 20; round++) await store.emit("payment.settled", { round });
      for (const d of await store.due(FUTURE, 100)) {
        const claims = await Promise.all([store.claim(d.id, FUTURE, LEASE), other.claim(d.id, FUTURE, LEASE)]);
        expect({ id: d.id, claimed: claims.filter(Boolean).length }).toEqual({ id: d.id, claimed: 1 });
      }
    });

    test("connections syncing the same files at once make each declared webhook once", async () => {
      const others = [(await connect()).store, (await connect()).store];
      const desired = [file("one"), file("two"), file("three")];
      const results = await Promise.all([store, ...others].map((s) => s.syncFiles(desired)));
      expect(results.reduce((n, r) => n + r.created, 0)).toBe(3);
      const sources = (await store.listWebhooks()).map((w) => w.source).sort();
      expect(sources).toEqual(desired.map((d) => d.source).sort());
    });
  });
});

describe.skipIf(skip.postgres)("postgres replicas", () => {
  test("a webhook made through one replica gets the next event another replica emits; disabled, none", async () => {
    const make = await shared("postgres");
    const one = await make();
    const two = await make();
    try {
      const hook = await one.store.createWebhook({ url: "https://example.test/a" });
      await two.store.emit("payment.settled", { payment_id: 1 });
      await one.store.updateWebhook(hook.id, { enabled: false });
      await two.store.emit("payment.settled", { payment_id: 2 });
      const items = (await one.store.listDeliveries({ webhookId: hook.id }, { limit: 10 })).items;
      expect(items.map((d) => JSON.parse(d.payload).data.payment_id)).toEqual([1]);
    } finally {
      await one.close();
      await two.close();
    }
  }, 60_000);
});

describe("an event the database refuses to queue", () => {
  const refused: string[] = [];
  const log = { error: (obj: object, msg: string) => refused.push(`${msg} ${JSON.stringify(obj)}`) };

  test("sqlite: logged and swallowed, outside a transaction and inside one (whose other writes commit)", async () => {
    refused.length = 0;
    const db = openDb(":memory:");
    try {
      const store = createNotificationStore(db, { log });
      const hook = store.createWebhook({ url: "https://example.test/a" });
      // Fault injection: the outbox refuses every row, as a full disk would.
      db.sqlite.exec(
        "CREATE TEMP TRIGGER refuse BEFORE INSERT ON webhook_deliveries BEGIN SELECT RAISE(ABORT, 'refused'); END",
      );
      store.emit("payment.settled", {});
      db.sqlite.transaction(() => {
        store.emit("payment.settled", {});
        store.updateWebhook(hook.id, { description: "written in the same transaction" });
      })();
      expect(refused).toHaveLength(2);
      expect(refused[0]).toContain("webhook event not queued");
      expect(store.getWebhook(hook.id)?.description).toBe("written in the same transaction");
    } finally {
      db.sqlite.close();
    }
  });

  test.skipIf(skip.postgres)(
    "postgres: logged and swallowed outside a transaction; inside one, thrown, and the transaction rolls back",
    async () => {
      refused.length = 0;
      const pg = await openPg(await createTestDatabase());
      try {
        const store = createPgNotificationStore(pg, { log });
        const hook = await store.createWebhook({ url: "https://example.test/a" });
        // Fault injection: the outbox refuses every row, as a full disk would.
        await pg.sql.unsafe(`
          CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
          CREATE TRIGGER refuse BEFORE INSERT ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION refuse();`);
        await store.emit("payment.settled", {});
        expect(refused).toHaveLength(1);
        expect(refused[0]).toContain("webhook event not queued");
        await expect(
          pg.transaction(async () => {
            await store.updateWebhook(hook.id, { description: "written in the same transaction" });
            await store.emit("payment.settled", {});
          }),
        ).rejects.toThrow();
        expect((await store.getWebhook(hook.id))?.description).toBeNull();
      } finally {
        await pg.close();
      }
    },
    60_000,
  );
});
