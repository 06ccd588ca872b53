/**
 * Background reconciliation when the database does not answer (PostgreSQL
 * restarting, a network blip): a round that cannot read the pending rows is
 * skipped and logged, never a rejection (the timer's `void runOnce()` would
 * stop the replica), and the next round settles what landed. An instruction
 * that cannot be read keeps its row pending (never settled without the
 * entitlement the buyer paid for); a deleted one settles it with none.
 *
 * The ledger, entitlements, instructions and their transaction are the real
 * SQLite ones. The chain is read through a stand-in RPC that shows every
 * authorization paid (as reconcile-paging.test.ts does); the faults are the
 * store wrappers named `failing...`, which reject while `down` is set.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import type { AuthorizationFinding } from "../../src/chain/authorization";
import { type Db, openDb } from "../../src/db/client";
import { createLogger } from "../../src/http/logging";
import { createReconciler, type Reconciler } from "../../src/ledger/reconcile";
import { resolveDeps } from "../../src/ledger/resolve-deps";
import type { Payment } from "../../src/ledger/store";
import { loadSettings } from "../../src/settings";
import { createStores, type SqliteStores } from "../../src/stores";
import { eventually } from "../support/eventually";
import { claim, PAYER } from "./claims";

const PAY_TO = "0x2222222222222222222222222222222222222222";
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const LANDED = `0x${"cd".repeat(32)}` as const;

/** The chain's answer for every row: its authorization paid pay-to in LANDED. */
const paidOnChain = async (_row: Payment): Promise<AuthorizationFinding> => ({ state: "paid", txHash: LANDED });

let db: Db;
let stores: SqliteStores;
let settings: ReturnType<typeof loadSettings>;
let row: Payment;
let instructionId: string;
let reconciler: Reconciler | undefined;
/** The log's lines, as pino writes them. */
let lines: { level: number; msg: string; reason?: string; errors?: number }[];
const log = () =>
  createLogger("info", {
    write: (t: string) =>
      lines.push(
        ...t
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l)),
      ),
  });
/** While true, the failing stores reject. */
let down: boolean;
/** Resolved the first time a failing store rejected. */
let faulted: Promise<void>;
let fault: () => Error;

beforeEach(() => {
  db = openDb(":memory:");
  settings = loadSettings({ CIDGATE_DB: ":memory:", PAY_TO });
  stores = createStores(db, settings);
  lines = [];
  down = true;
  let hit: () => void;
  faulted = new Promise((resolve) => {
    hit = resolve;
  });
  fault = () => {
    hit();
    return new Error("fault: the database does not answer");
  };
  const inst = stores.instructions.create({
    name: "fee",
    requirements: [{ network: "base-sepolia", asset: USDC, pay_to: PAY_TO, amount: "10000" }],
  });
  instructionId = inst.id;
  const { payment } = stores.payments.claim(claim({ instructionId, instructionVersion: inst.version }));
  row = stores.payments.markUnconfirmed(payment.id, "facilitator settle: no answer")!;
});

afterEach(async () => {
  await reconciler?.stop();
  reconciler = undefined;
  db.sqlite.close();
});

/** Fault: the payments table cannot be read while `down`; every other call is the real store's. */
function failingPayments(): SqliteStores["payments"] {
  const real = stores.payments;
  return {
    ...real,
    unresolved: (...args: Parameters<typeof real.unresolved>) =>
      down ? (Promise.reject(fault()) as never) : real.unresolved(...args),
  };
}

/** Fault: an instruction cannot be read while `down` (not a 404: the database did not answer). */
function failingInstructions(): SqliteStores["instructions"] {
  const real = stores.instructions;
  return { ...real, get: (id: string) => (down ? (Promise.reject(fault()) as never) : real.get(id)) };
}

function reconcilerOver(over: Partial<SqliteStores>, intervalSeconds = 3600): Reconciler {
  reconciler = createReconciler({
    ...resolveDeps({ ...stores, ...over }, settings, log(), paidOnChain),
    intervalSeconds,
  });
  return reconciler;
}

const entitlements = () => stores.entitlements.list({ payer: PAYER }, { limit: 10 }).items;

test("a round whose pending rows cannot be read resolves with one error, logged; the next round settles the landed row", async () => {
  const r = reconcilerOver({ payments: failingPayments() });

  expect(await r.runOnce()).toEqual({ checked: 0, settled: 0, released: 0, open: 0, errors: 1 });
  const warned = lines.find((l) => l.msg === "reconciliation: the pending payments could not be read");
  expect(warned?.level).toBe(40);
  expect(warned?.reason).toContain("the database does not answer");
  expect(stores.payments.get(row.id)?.state).toBe("pending");

  down = false;
  expect(await r.runOnce()).toMatchObject({ checked: 1, settled: 1, errors: 0 });
  expect(stores.payments.get(row.id)).toMatchObject({ state: "settled", txHash: LANDED });
  expect(entitlements()).toHaveLength(1);
});

test("started on its timer, the reconciler outlives a round the database did not answer and settles on a later one", async () => {
  // 50 ms rounds: the first one (at start) meets the fault; the test waits for whichever later one settles.
  reconcilerOver({ payments: failingPayments() }, 0.05).start();
  await faulted;
  down = false;
  await eventually(() => stores.payments.get(row.id)?.state === "settled", "the landed payment settled");
  expect(stores.payments.get(row.id)?.txHash).toBe(LANDED);
  expect(lines.some((l) => l.msg === "reconciliation: the pending payments could not be read")).toBe(true);
});

test("an instruction the database cannot read leaves the row pending, without a grant; the next round settles it with its entitlement", async () => {
  const r = reconcilerOver({ instructions: failingInstructions() });

  expect(await r.runOnce()).toMatchObject({ checked: 1, settled: 0, errors: 1 });
  expect(stores.payments.get(row.id)?.state).toBe("pending");
  expect(entitlements()).toEqual([]);

  down = false;
  expect(await r.runOnce()).toMatchObject({ checked: 1, settled: 1, errors: 0 });
  expect(stores.payments.get(row.id)).toMatchObject({ state: "settled", txHash: LANDED });
  expect(entitlements()).toMatchObject([{ payer: PAYER, instructionId }]);
});

test("a deleted instruction: the landed payment is settled, and nothing is granted", async () => {
  stores.instructions.remove(instructionId);
  const r = reconcilerOver({});

  expect(await r.runOnce()).toMatchObject({ checked: 1, settled: 1, errors: 0 });
  expect(stores.payments.get(row.id)).toMatchObject({ state: "settled", txHash: LANDED });
  expect(entitlements()).toEqual([]);
});
