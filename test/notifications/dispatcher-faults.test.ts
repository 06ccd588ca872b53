/**
 * The webhook dispatcher when the database does not answer: a poll whose
 * `nextDue` fails still schedules the next one, so an event queued by
 * another process (a CLI on the SQLite file; another replica on PostgreSQL),
 * which this process is never told about, is still sent.
 *
 * Real SQLite file opened twice (this process, and the other one), a real
 * receiver on 127.0.0.1. The fault: `failingNextDue`, the dispatcher's store
 * whose first `nextDue` rejects.
 */
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Db, openDb } from "../../src/db/client";
import { createDispatcher, type Dispatcher } from "../../src/notifications/dispatcher";
import { createNotificationStore, type NotificationStore } from "../../src/notifications/store";
import { type Receiver, startReceiver } from "./support";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Fault: the first `nextDue` rejects (the database did not answer); `faulted` resolves then. */
function failingNextDue(real: NotificationStore) {
  let failed = false;
  let told: () => void;
  const faulted = new Promise<void>((resolve) => {
    told = resolve;
  });
  const store: NotificationStore = {
    ...real,
    nextDue: () => {
      if (failed) return real.nextDue();
      failed = true;
      told();
      return Promise.reject(new Error("fault: the database does not answer"));
    },
  };
  return { store, faulted };
}

test("after a poll the database did not answer, a delivery queued by another process is still sent", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-dispatcher-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const open = (): Db => {
    const db = openDb(join(dir, "db.sqlite"));
    cleanups.push(() => db.sqlite.close());
    return db;
  };
  const hook: Receiver = startReceiver();
  cleanups.push(() => hook.stop());
  const warnings: string[] = [];
  const ours = createNotificationStore(open());
  const { store, faulted } = failingNextDue(ours);
  const dispatcher: Dispatcher = createDispatcher({
    store,
    pollMs: 50,
    log: { info() {}, warn: (_obj, msg) => warnings.push(msg) },
  });
  cleanups.push(() => dispatcher.stop());

  dispatcher.start(); // nothing due: it polls, and that poll's nextDue fails
  await faulted;
  // Another process queues an event: nothing in this process is told; only a poll finds it.
  const elsewhere = createNotificationStore(open());
  const webhook = elsewhere.createWebhook({ url: hook.url });
  elsewhere.emit("payment.settled", { payment_id: 1 });

  await hook.until(1); // the test's own time limit bounds the wait
  expect(hook.events().map((e) => e.type)).toEqual(["payment.settled"]);
  const [delivery] = elsewhere.listDeliveries({ webhookId: webhook.id }, { limit: 10 }).items;
  await dispatcher.idle();
  expect(elsewhere.getDelivery(delivery.id)?.state).toBe("delivered");
  expect(warnings).toContain("webhook dispatcher run failed");
}, 15_000); // a generous limit for a busy machine: unfixed, the delivery never goes and this is what fails
