/**
 * Several replicas on one PostgreSQL database: pricing reloads started at
 * once on two replicas (each with its own pool, as two processes) end as one
 * would, an identical reload writes nothing (no row version, no move of
 * catalog_generation, so no replica drops its cached offers), and a write
 * through one replica is seen by another's catalog_generation poll.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { pollCatalogGeneration } from "../../src/db/catalog-generation-pg";
import type { Pg } from "../../src/db/pg";
import type { FileInstruction } from "../../src/instructions/file-sync-plan";
import { eventually } from "../support/eventually";
import { closeEngineStores, engineStores, enginesHere } from "./engines";

const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const PAY_TO = "0x1111111111111111111111111111111111111111";
const CIDS = [
  "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e",
  "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku",
  "QmWmRj3dFDZdb6ABvbmKhEL6TmPbAfBZ1t5BxsEyJrcZhE",
];

function declared(key: string, amount: string, cids: string[]): FileInstruction {
  const requirements = [{ network: "base-sepolia" as const, asset: USDC, pay_to: PAY_TO, amount }];
  return {
    source: `file:prices.yaml#${key}`,
    name: key,
    description: null,
    requirements,
    requirementsJson: JSON.stringify(requirements),
    access: "forever",
    access_scope: "cid",
    cids: cids.map((cid) => ({ cid })),
  };
}

const settings = { contentDir: "/nonexistent" };
/** Two pools on a busy shared machine may take longer than bun's 5 s default (a limit, not a measurement). */
const SLOW = 30_000;
const generation = async (s: Awaited<ReturnType<typeof engineStores>>) =>
  Number((await s.pg!.sql<{ g: string }[]>`SELECT generation::text AS g FROM catalog_generation`)[0].g);

afterEach(closeEngineStores);

const engines = await enginesHere("instructions across replicas (PostgreSQL)");

describe.skipIf(!engines.includes("postgres"))("two replicas, one database", () => {
  test(
    "two syncs of the same files at once from two pools end with the rows one sync makes",
    async () => {
      const a = await engineStores("postgres", settings);
      const b = await engineStores("postgres", settings, a.location);
      const desired = [declared("one", "10", [CIDS[0], CIDS[1]]), declared("two", "20", [CIDS[2]])];

      const [ra, rb] = await Promise.all([
        a.stores.instructions.syncFiles(desired),
        b.stores.instructions.syncFiles(desired),
      ]);
      // One made everything, the other (serialized behind it) found nothing to do.
      const made = [ra, rb].map((r) => (r.ok ? r.changes.created.length : -1)).sort();
      expect(made).toEqual([0, 2]);
      const rows = await a.rows();
      expect(rows.map((r) => [r.source, r.version])).toEqual([
        ["file:prices.yaml#one", 1],
        ["file:prices.yaml#two", 1],
      ]);
      const ids = Object.fromEntries(rows.map((r) => [r.name, r.id]));
      expect(await a.mappings()).toEqual(
        [
          { cid: CIDS[0], instruction_id: ids.one },
          { cid: CIDS[1], instruction_id: ids.one },
          { cid: CIDS[2], instruction_id: ids.two },
        ].sort((x, y) => (x.cid < y.cid ? -1 : 1)),
      );

      // The same files again, from either replica: not one row touched, catalog_generation unmoved.
      const mark = await a.writeMark();
      const moved = await generation(a);
      const again = await b.stores.instructions.syncFiles(desired);
      expect(again).toEqual({
        ok: true,
        changes: { created: [], updated: [], deleted: [], cidsAttached: 0, cidsDetached: 0 },
      });
      expect(await generation(a)).toBe(moved);
      expect(await a.writeMark()).toBe(mark);
    },
    SLOW,
  );

  test(
    "an identical sync leaves catalog_generation where it was; a change moves it",
    async () => {
      const a = await engineStores("postgres", settings);
      const desired = [declared("one", "10", [CIDS[0]])];
      await a.stores.instructions.syncFiles(desired);
      const before = await generation(a);
      expect(before).toBeGreaterThan(0);
      await a.stores.instructions.syncFiles(desired);
      expect(await generation(a)).toBe(before);
      const priced = await a.stores.instructions.syncFiles([declared("one", "11", [CIDS[0]])]);
      expect(priced.ok && priced.changes.updated.map((u) => u.version)).toEqual([2]);
      expect(await generation(a)).toBeGreaterThan(before);
    },
    SLOW,
  );

  test(
    "a write through one replica is seen by another replica's catalog_generation poll",
    async () => {
      const a = await engineStores("postgres", settings);
      const b = await engineStores("postgres", settings, a.location);
      const poll = pollCatalogGeneration(b.pg!);
      try {
        await eventually(() => poll.current() >= 0, "the first read of catalog_generation");
        const seen = poll.current();
        await a.stores.instructions.create({
          name: "by hand",
          requirements: [{ network: "base-sepolia", asset: USDC, pay_to: PAY_TO, amount: "5" }],
        });
        await eventually(() => poll.current() > seen, "replica b seeing replica a's write");
        // And through b's catalog signal (its own poll), as the catalog asks it.
        await eventually(() => b.stores.changes.elsewhere() > seen, "replica b's catalog signal moving");
      } finally {
        poll.stop();
      }
    },
    SLOW,
  );

  test(
    "a failing read of catalog_generation is said once, retried, and the poll goes on when it answers again",
    async () => {
      const a = await engineStores("postgres", settings);
      // Fault injection: the first reads fail as a lost connection would, then the real pool answers.
      let failuresLeft = 5;
      const faultyPg = {
        ...a.pg!,
        db: {
          execute: (query: Parameters<Pg["db"]["execute"]>[0]) =>
            failuresLeft-- > 0 ? Promise.reject(new Error("injected: connection lost")) : a.pg!.db.execute(query),
        },
      } as unknown as Pg;
      const said: [string, string, object][] = [];
      const poll = pollCatalogGeneration(faultyPg, 10, {
        error: (obj, msg) => said.push(["error", msg, obj]),
        info: (obj, msg) => said.push(["info", msg, obj]),
      });
      try {
        await eventually(() => poll.current() >= 0, "the poll answering after the failures");
        expect(failuresLeft).toBeLessThan(0); // every injected failure was met, and retried
        expect(said.map(([level]) => level)).toEqual(["error", "info"]);
        expect(said[0][2]).toEqual({ event: "catalog-generation", err: "injected: connection lost" });
      } finally {
        poll.stop();
      }
    },
    SLOW,
  );
});
