/**
 * The payments list with a time range (src/ledger/store.ts pages SQLite along
 * the rowid from the range's largest id; store-pg.ts leaves it to
 * PostgreSQL's planner): still exactly the rows of the range, newest id
 * first, when creation times do not follow ids (a clock stepped back, a row's
 * time corrected).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { claim } from "./claims";
import { LEDGER_ENGINES, type Ledger, openLedger } from "./ledger-db";

describe.each(LEDGER_ENGINES)("%s", (engine) => {
  let ledger: Ledger;
  beforeEach(async () => {
    ledger = await openLedger(engine);
  });
  afterEach(() => ledger.close());

  test("a time-filtered list is every row of the range, in id order, page after page, whatever the times", async () => {
    const store = ledger.payments;
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const start = Date.parse("2026-05-01T00:00:00.000Z");
    for (let i = 0; i < 300; i++) {
      const { payment } = await store.claim(claim({ cid: i % 3 ? "bafya" : "bafyb" }));
      // Times mostly rising with ids, with one row in five thrown anywhere in the ten days.
      const at = random() < 0.2 ? start + random() * 10 * 86_400_000 : start + i * 2_880_000;
      await ledger.raw("UPDATE payments SET created_at = ? WHERE id = ?", new Date(at).toISOString(), payment.id);
    }
    const all = (
      await ledger.raw<{ id: number | string; created_at: string; cid: string }>(
        "SELECT id, created_at, cid FROM payments",
      )
    ).map((r) => ({ ...r, id: Number(r.id) }));
    expect(all).toHaveLength(300);
    for (let k = 0; k < 20; k++) {
      const a = start + random() * 10 * 86_400_000;
      const b = a + random() * 5 * 86_400_000;
      const from = random() < 0.2 ? undefined : new Date(a).toISOString();
      const to = random() < 0.2 ? undefined : new Date(b).toISOString();
      const cid = random() < 0.3 ? "bafyb" : undefined;
      for (const order of ["desc", "asc"] as const) {
        const expected = all
          .filter((r) => (from === undefined || r.created_at >= from) && (to === undefined || r.created_at < to))
          .filter((r) => cid === undefined || r.cid === cid)
          .map((r) => r.id)
          .sort((x, y) => (order === "desc" ? y - x : x - y));
        const seen: number[] = [];
        let afterId: number | undefined;
        do {
          const page = await store.list({ createdFrom: from, createdTo: to, cid }, { limit: 7, afterId, order });
          seen.push(...page.items.map((p) => p.id));
          afterId = page.nextAfterId;
        } while (afterId !== undefined);
        expect(seen).toEqual(expected);
      }
    }
  });
});
