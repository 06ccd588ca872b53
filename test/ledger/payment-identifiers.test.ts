/**
 * The payment_identifiers store (src/ledger/payment-identifiers.ts): new,
 * same, conflict; the payment attached; and the same answers from a second
 * connection to the file (another process).
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Db, openDb } from "../../src/db/client";
import { createPaymentIdentifierStore } from "../../src/ledger/payment-identifiers";

const ID = "pay_7d5d747be160e280504c099d984bcfe0";
const NOW = "2026-11-23T01:00:00.000Z";

let dir: string;
let one: Db;
let two: Db;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cidgate-payment-ids-"));
  one = openDb(join(dir, "db.sqlite"));
  two = openDb(join(dir, "db.sqlite")); // stands for another process on the same file
});

afterEach(() => {
  one.sqlite.close();
  two.sqlite.close();
  rmSync(dir, { recursive: true, force: true });
});

test("new, then the same payload is the same request, another payload a conflict", () => {
  const ids = createPaymentIdentifierStore(one);
  expect(ids.remember(ID, "hash-a", NOW)).toEqual({ kind: "new" });
  expect(ids.remember(ID, "hash-a", NOW)).toEqual({ kind: "same", paymentId: null });
  expect(ids.remember(ID, "hash-b", NOW)).toEqual({ kind: "conflict" });
  ids.attach(ID, 42);
  expect(ids.remember(ID, "hash-a", NOW)).toEqual({ kind: "same", paymentId: 42 });
  expect(ids.remember(ID, "hash-b", NOW)).toEqual({ kind: "conflict" });
  expect(ids.find(ID)).toEqual({ id: ID, payloadHash: "hash-a", paymentId: 42, createdAt: NOW });
  expect(ids.find("pay_unknown_unknown_")).toBeUndefined();
  // Another id is its own request.
  expect(ids.remember(`${ID}x`, "hash-b", NOW)).toEqual({ kind: "new" });
});

test("two store instances on one file database agree: only one of them sees the id as new", () => {
  const a = createPaymentIdentifierStore(one);
  const b = createPaymentIdentifierStore(two);
  const results = [a.remember(ID, "hash-a", NOW), b.remember(ID, "hash-a", NOW)];
  expect(results.filter((r) => r.kind === "new")).toHaveLength(1);
  expect(results.filter((r) => r.kind === "same")).toHaveLength(1);
  expect(b.remember(ID, "hash-b", NOW)).toEqual({ kind: "conflict" });
  a.attach(ID, 7);
  expect(b.remember(ID, "hash-a", NOW)).toEqual({ kind: "same", paymentId: 7 });
  expect(b.find(ID)?.paymentId).toBe(7);
});

test("attach on an unknown id writes nothing", () => {
  const ids = createPaymentIdentifierStore(one);
  ids.attach("pay_nobody_nobody_nobody", 1);
  expect(ids.find("pay_nobody_nobody_nobody")).toBeUndefined();
});

test("release frees an id whose request moved no money, and only that: not another payload's, not a paid one", () => {
  const ids = createPaymentIdentifierStore(one);
  expect(ids.remember(ID, "hash-a", NOW)).toEqual({ kind: "new" });
  ids.release(ID, "hash-b"); // not the payload it was remembered with: kept
  expect(ids.remember(ID, "hash-b", NOW)).toEqual({ kind: "conflict" });
  ids.release(ID, "hash-a");
  expect(ids.find(ID)).toBeUndefined();
  expect(ids.remember(ID, "hash-b", NOW)).toEqual({ kind: "new" }); // a corrected payment may use it
  ids.attach(ID, 9);
  ids.release(ID, "hash-b"); // it paid: never forgotten
  expect(ids.remember(ID, "hash-c", NOW)).toEqual({ kind: "conflict" });
  expect(ids.find(ID)?.paymentId).toBe(9);
});
