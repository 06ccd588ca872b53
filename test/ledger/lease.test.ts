/**
 * The background reconciler on one replica at a time (issue 14): a lease row
 * on PostgreSQL (src/ledger/lease-pg.ts) asked before each round. Two
 * replicas (two pools on one database): only the holder runs rounds; it gives
 * the lease up when it stops, or lets it lapse, and the other takes over.
 *
 * The chain here is a fault injector (named so): an RPC that can never decide
 * a row, so every round looks at the one pending row and leaves it open.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { AuthorizationFinding } from "../../src/chain/authorization";
import type { Pg } from "../../src/db/pg";
import { openPg } from "../../src/db/pg";
import { createPgLease, RECONCILE_LEASE, reconcileLeaseMs } from "../../src/ledger/lease-pg";
import { createReconciler, type ReconcileRound, type Reconciler } from "../../src/ledger/reconcile";
import { createPgPaymentStore } from "../../src/ledger/store-pg";
import { eventually } from "../support/eventually";
import { createTestDatabase, pgAvailable } from "../support/postgres";
import { claim } from "./claims";

const available = await pgAvailable("ledger/lease");

/** Fault injector: the chain never tells what became of an authorization. */
const undecidedChain = async (): Promise<AuthorizationFinding> => ({ state: "unknown", detail: "not found (fault)" });

describe.skipIf(!available)("the reconciler's lease", () => {
  let replicas: Pg[];
  beforeEach(async () => {
    const url = await createTestDatabase();
    replicas = [await openPg(url), await openPg(url)];
    const payments = createPgPaymentStore(replicas[0]);
    const { payment } = await payments.claim(claim());
    await payments.markUnconfirmed(payment.id, "facilitator settle: no answer");
  }, 60_000); // the first one starts the test server
  afterEach(async () => {
    for (const pg of replicas) await pg.close();
  });

  function reconcilerOn(pg: Pg, ttlMs: number): Reconciler {
    const lease = createPgLease(pg, RECONCILE_LEASE, ttlMs);
    return createReconciler({
      payments: createPgPaymentStore(pg),
      timeoutMs: 10_000,
      lookup: undecidedChain,
      instructionAccess: () => undefined,
      pendingBefore: () => new Date().toISOString(),
      intervalSeconds: 3600,
      lease: lease.hold,
      releaseLease: lease.release,
    });
  }

  const ran: ReconcileRound = { checked: 1, settled: 0, released: 0, open: 1, errors: 0 };
  const skipped: ReconcileRound = { skipped: true, checked: 0, settled: 0, released: 0, open: 0, errors: 0 };

  test("only the holder runs rounds; once it stops, the other replica takes over", async () => {
    const a = reconcilerOn(replicas[0], reconcileLeaseMs(3600));
    const b = reconcilerOn(replicas[1], reconcileLeaseMs(3600));
    expect(await a.runOnce()).toEqual(ran);
    expect(await b.runOnce()).toEqual(skipped);
    expect(await a.runOnce()).toEqual(ran); // renewed, still its
    expect(await b.runOnce()).toEqual(skipped);
    await a.stop();
    expect(await b.runOnce()).toEqual(ran);
    expect(await a.runOnce()).toEqual(skipped);
    await b.stop();
  });

  test("a holder that stops renewing (a dead replica) loses the lease once it lapses", async () => {
    const a = reconcilerOn(replicas[0], 300);
    const b = reconcilerOn(replicas[1], 300);
    expect(await a.runOnce()).toEqual(ran);
    expect(await b.runOnce()).toEqual(skipped); // A's lease has not run out yet (the database's clock says so)
    // A never asks again, as a replica that died: B runs once the lease has run out.
    await eventually(async () => (await b.runOnce()).skipped === undefined, "the other replica taking over");
    expect(await a.runOnce()).toEqual(skipped);
  });

  test("many replicas asking at once: exactly one holds the lease", async () => {
    const leases = Array.from({ length: 20 }, (_, i) => createPgLease(replicas[i % 2], "race", 60_000));
    const held = await Promise.all(leases.map((l) => l.hold()));
    expect(held.filter(Boolean)).toHaveLength(1);
    const holder = leases[held.indexOf(true)];
    const [row] = await replicas[1].sql`SELECT holder FROM leases WHERE name = 'race'`;
    expect(row.holder).toBe(holder.holder);
    // Released, it goes to the next to ask; a release by anyone else takes nothing away.
    await leases.find((l) => l !== holder)!.release();
    expect(await leases.find((l) => l !== holder)!.hold()).toBe(false);
    await holder.release();
    expect(await leases.find((l) => l !== holder)!.hold()).toBe(true);
  });
});
