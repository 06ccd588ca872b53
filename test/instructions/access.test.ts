/**
 * The access policy on the management API: optional on create and update
 * (the pinata SDK never sends it), always answered, checked, and a change of
 * policy is a change (version +1).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { closeEngineStores, enginesHere } from "./engines";
import { makeHarness, PREFIX } from "./harness";

const engines = await enginesHere("access policy API");
afterEach(closeEngineStores);

describe.each(engines)("%s", (engine) => {
  describe("access and access_scope (cidgate extension)", () => {
    test("omitted on create: forever and cid, answered on create, get and list", async () => {
      const h = await makeHarness({}, engine);
      const pi = await h.create();
      expect(pi).toMatchObject({ access: "forever", access_scope: "cid", version: 1 });
      expect((await h.call("GET", `${PREFIX}/${pi.id}`)).json.data).toMatchObject({
        access: "forever",
        access_scope: "cid",
      });
      expect((await h.call("GET", PREFIX)).json.data.payment_instructions[0]).toMatchObject({ access: "forever" });
      expect(await h.stores.instructions.get(pi.id)).toMatchObject({ access: "forever", access_scope: "cid" });
    });

    test("given on create: stored and answered as given", async () => {
      const h = await makeHarness({}, engine);
      const pi = await h.create({ access: "30d", access_scope: "instruction" });
      expect(pi).toMatchObject({ access: "30d", access_scope: "instruction" });
      expect(await h.stores.instructions.get(pi.id)).toMatchObject({ access: "30d", access_scope: "instruction" });
    });

    test("a bad value is a 400 naming the field; nothing is written", async () => {
      const h = await makeHarness({}, engine);
      const before = await h.snapshot();
      for (const [body, field] of [
        [{ access: "30" }, "access"],
        [{ access: "0d" }, "access"],
        [{ access: "always" }, "access"],
        [{ access: 30 }, "access"],
        [{ access_scope: "file" }, "access_scope"],
      ] as const) {
        const res = await h.call("POST", PREFIX, {
          body: {
            name: "x",
            payment_requirements: [
              {
                network: "base-sepolia",
                pay_to: `0x${"1".repeat(40)}`,
                asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
                amount: "1",
              },
            ],
            ...body,
          },
        });
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.json.error.code).toBe("invalid_request");
        expect(res.json.error.details.map((d: { path: string }) => d.path)).toEqual([field]);
      }
      expect(await h.snapshot()).toBe(before);
    });

    test("update: a new policy is version +1; the same policy, or fields left out, change nothing", async () => {
      const h = await makeHarness({}, engine);
      const pi = await h.create();
      const same = await h.call("PATCH", `${PREFIX}/${pi.id}`, { body: { access: "forever" } });
      expect(same.status).toBe(200);
      expect(same.json.data.version).toBe(1);

      const changed = await h.call("PATCH", `${PREFIX}/${pi.id}`, { body: { access: "once" } });
      expect(changed.json.data).toMatchObject({ version: 2, access: "once", access_scope: "cid" });
      const scoped = await h.call("PATCH", `${PREFIX}/${pi.id}`, { body: { access_scope: "instruction" } });
      expect(scoped.json.data).toMatchObject({ version: 3, access: "once", access_scope: "instruction" });

      // A Pinata-style update (no access fields) keeps the policy.
      const renamed = await h.call("PATCH", `${PREFIX}/${pi.id}`, { body: { name: "Renamed" } });
      expect(renamed.json.data).toMatchObject({ version: 4, access: "once", access_scope: "instruction" });

      const bad = await h.call("PATCH", `${PREFIX}/${pi.id}`, { body: { access: "12" } });
      expect(bad.status).toBe(400);
      expect(bad.json.error.details).toEqual([
        { path: "access", message: expect.stringContaining("unit m, h, d or w") },
      ]);
      expect((await h.stores.instructions.get(pi.id)).version).toBe(4);
    });

    test("OpenAPI documents the fields on the instruction", async () => {
      const h = await makeHarness({}, engine);
      const doc = (await h.call("GET", "/openapi/json", { token: null })).json;
      expect(JSON.stringify(doc)).toContain("cidgate extension");
    });
  });
});
