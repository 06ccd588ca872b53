import { afterEach, describe, expect, test } from "bun:test";
import { closeEngineStores, enginesHere } from "./engines";
import { BASE_SEPOLIA_USDC, BASE_USDC, CID_V0, CID_V1, makeHarness, PAY_TO, PREFIX, requirement } from "./harness";

const engines = await enginesHere("payment instructions API");
afterEach(closeEngineStores);

describe.each(engines)("%s", (engine) => {
  const UUIDV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

  describe("create", () => {
    test("answers {data: PaymentInstruction} with a UUIDv7, version 1, ISO UTC time, canonical requirement", async () => {
      const h = await makeHarness({}, engine);
      const res = await h.call("POST", PREFIX, {
        body: {
          name: "Premium",
          description: "Access to premium files",
          payment_requirements: [requirement({ network: "eip155:84532", description: "Access fee" })],
        },
      });
      expect(res.status).toBe(200);
      const pi = res.json.data;
      expect(pi.id).toMatch(UUIDV7);
      expect(pi.version).toBe(1);
      expect(pi.name).toBe("Premium");
      expect(pi.description).toBe("Access to premium files");
      expect(pi.created_at).toMatch(ISO_UTC);
      expect(pi.source).toBe("api");
      expect(pi.payment_requirements).toEqual([
        {
          network: "base-sepolia",
          asset: BASE_SEPOLIA_USDC,
          pay_to: PAY_TO,
          amount: "10000",
          description: "Access fee",
        },
      ]);
      // and it is really stored
      const got = await h.call("GET", `${PREFIX}/${pi.id}`);
      expect(got.json).toEqual(res.json);
    });

    test("accepts every network spelling and stores the canonical name", async () => {
      const h = await makeHarness({}, engine);
      for (const [spelling, canonical, usdc] of [
        ["base", "base", BASE_USDC],
        ["eip155:8453", "base", BASE_USDC],
        ["base-sepolia", "base-sepolia", BASE_SEPOLIA_USDC],
        ["eip155:84532", "base-sepolia", BASE_SEPOLIA_USDC],
      ]) {
        const pi = await h.create({ payment_requirements: [requirement({ network: spelling, asset: usdc })] });
        expect((pi.payment_requirements as { network: string }[])[0].network).toBe(canonical);
      }
    });

    test("accepts the older field max_amount_required as amount", async () => {
      const h = await makeHarness({}, engine);
      const { amount: _, ...rest } = requirement();
      const pi = await h.create({ payment_requirements: [{ ...rest, max_amount_required: "25000" }] });
      expect((pi.payment_requirements as { amount: string }[])[0].amount).toBe("25000");
    });

    test("USDC_ADDRESS_BASE_SEPOLIA replaces the expected asset (local test chains)", async () => {
      const token = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
      const h = await makeHarness({ USDC_ADDRESS_BASE_SEPOLIA: token }, engine);
      const pi = await h.create({ payment_requirements: [requirement({ asset: token.toLowerCase() })] });
      expect((pi.payment_requirements as { asset: string }[])[0].asset).toBe(token);
      const real = await h.call("POST", PREFIX, { body: { name: "x", payment_requirements: [requirement()] } });
      expect(real.status).toBe(400);
      expect(real.json.error.details[0].path).toBe("payment_requirements.0.asset");
    });
  });

  describe("validation: 400 naming the field, database unchanged", () => {
    const cases: [string, unknown, string][] = [
      ["missing name", { payment_requirements: [requirement()] }, "name"],
      ["empty name", { name: "", payment_requirements: [requirement()] }, "name"],
      ["name too long", { name: "n".repeat(256), payment_requirements: [requirement()] }, "name"],
      ["description not a string", { name: "a", description: 5, payment_requirements: [requirement()] }, "description"],
      ["no requirements", { name: "a", payment_requirements: [] }, "payment_requirements"],
      ["requirements missing", { name: "a" }, "payment_requirements"],
      [
        "unknown network",
        { name: "a", payment_requirements: [requirement({ network: "ethereum" })] },
        "payment_requirements.0.network",
      ],
      [
        "asset not an address",
        { name: "a", payment_requirements: [requirement({ asset: "0x1234" })] },
        "payment_requirements.0.asset",
      ],
      [
        "asset of the other network",
        { name: "a", payment_requirements: [requirement({ asset: BASE_USDC })] },
        "payment_requirements.0.asset",
      ],
      [
        "pay_to not an address",
        { name: "a", payment_requirements: [requirement({ pay_to: "alice.eth" })] },
        "payment_requirements.0.pay_to",
      ],
      [
        "pay_to zero address",
        { name: "a", payment_requirements: [requirement({ pay_to: "0x0000000000000000000000000000000000000000" })] },
        "payment_requirements.0.pay_to",
      ],
      [
        "amount zero",
        { name: "a", payment_requirements: [requirement({ amount: "0" })] },
        "payment_requirements.0.amount",
      ],
      [
        "amount negative",
        { name: "a", payment_requirements: [requirement({ amount: "-5" })] },
        "payment_requirements.0.amount",
      ],
      [
        "amount decimal",
        { name: "a", payment_requirements: [requirement({ amount: "0.01" })] },
        "payment_requirements.0.amount",
      ],
      [
        "amount a number",
        { name: "a", payment_requirements: [requirement({ amount: 10000 })] },
        "payment_requirements.0.amount",
      ],
      [
        "amount missing",
        { name: "a", payment_requirements: [{ network: "base-sepolia", asset: BASE_SEPOLIA_USDC, pay_to: PAY_TO }] },
        "payment_requirements.0.amount",
      ],
      [
        "requirement description over 255",
        { name: "a", payment_requirements: [requirement({ description: "d".repeat(256) })] },
        "payment_requirements.0.description",
      ],
      [
        "second requirement bad",
        { name: "a", payment_requirements: [requirement(), requirement({ network: "eip155:1" })] },
        "payment_requirements.1.network",
      ],
      [
        "duplicate requirement",
        { name: "a", payment_requirements: [requirement(), requirement({ amount: "5" })] },
        "payment_requirements.1",
      ],
    ];
    for (const [what, body, field] of cases) {
      test(`create: ${what} -> ${field}`, async () => {
        const h = await makeHarness({}, engine);
        await h.create();
        const before = await h.snapshot();
        const res = await h.call("POST", PREFIX, { body });
        expect(res.status).toBe(400);
        expect(res.json.error.code).toBe("invalid_request");
        expect(res.json.error.message).toContain(field);
        expect(res.json.error.details.map((d: { path: string }) => d.path)).toContain(field);
        expect(await h.snapshot()).toBe(before);
      });
    }

    test("a body that is not an object is a 400", async () => {
      const h = await makeHarness({}, engine);
      for (const body of ["[]", "42", '"text"', "null"]) {
        const res = await h.call("POST", PREFIX, { body });
        expect(res.status).toBe(400);
        expect(res.json.error).toBeDefined();
      }
      expect(await h.snapshot()).toBe(JSON.stringify({ instructions: [], cids: [] }));
    });

    test("patch: each bad field is a 400 naming it, and nothing changes", async () => {
      const h = await makeHarness({}, engine);
      const pi = await h.create();
      const before = await h.snapshot();
      for (const [body, field] of [
        [{ name: "" }, "name"],
        [{ payment_requirements: [] }, "payment_requirements"],
        [{ payment_requirements: [requirement({ amount: "abc" })] }, "payment_requirements.0.amount"],
        [{ name: "ok", payment_requirements: [requirement({ asset: BASE_USDC })] }, "payment_requirements.0.asset"],
        [{ description: 7 }, "description"],
      ] as const) {
        const res = await h.call("PATCH", `${PREFIX}/${pi.id}`, { body });
        expect(res.status).toBe(400);
        expect(res.json.error.details.map((d: { path: string }) => d.path)).toContain(field);
      }
      expect(await h.snapshot()).toBe(before);
    });

    test("list: limit outside 1..1000 or not a number is a 400 naming limit", async () => {
      const h = await makeHarness({}, engine);
      for (const limit of ["0", "1001", "-1", "abc", "1.5"]) {
        const res = await h.call("GET", `${PREFIX}?limit=${limit}`);
        expect(res.status).toBe(400);
        expect(res.json.error.details[0].path).toBe("limit");
      }
      expect((await h.call("GET", `${PREFIX}?limit=1000`)).status).toBe(200);
      const pi = await h.create();
      const cids = await h.call("GET", `${PREFIX}/${pi.id}/cids?limit=1001`);
      expect(cids.status).toBe(400);
      expect(cids.json.error.details[0].path).toBe("limit");
      expect((await h.call("GET", `${PREFIX}/${pi.id}/cids?limit=1000`)).status).toBe(200);
    });

    test("list: an empty limit (`?limit=`) is not a number: a 400 naming limit, on both paged lists", async () => {
      // parseLimit: only an absent limit takes the default; an empty one is a value, and not a whole number
      const h = await makeHarness({}, engine);
      const pi = await h.create();
      for (const path of [`${PREFIX}?limit=`, `${PREFIX}/${pi.id}/cids?limit=`]) {
        const res = await h.call("GET", path);
        expect({ path, status: res.status }).toEqual({ path, status: 400 });
        expect(res.json.error.details.map((d: { path: string }) => d.path)).toEqual(["limit"]);
      }
      // absent: the default page
      expect((await h.call("GET", PREFIX)).status).toBe(200);
      expect((await h.call("GET", `${PREFIX}/${pi.id}/cids`)).status).toBe(200);
    });

    test("list: a garbage pageToken, cid or id filter is a 400 naming it", async () => {
      const h = await makeHarness({}, engine);
      for (const [q, field] of [
        ["pageToken=garbage!", "pageToken"],
        ["pageToken=Zm9v", "pageToken"],
        ["cid=not-a-cid", "cid"],
        ["id=123", "id"],
      ]) {
        const res = await h.call("GET", `${PREFIX}?${q}`);
        expect(res.status).toBe(400);
        expect(res.json.error.details[0].path).toBe(field);
      }
    });
  });

  describe("get / patch / delete", () => {
    test("unknown or malformed id is a 404 in the error shape", async () => {
      const h = await makeHarness({}, engine);
      for (const id of ["01900000-0000-7000-8000-000000000000", "nope"]) {
        for (const [method, body] of [["GET"], ["PATCH", { name: "x" }], ["DELETE"]] as const) {
          const res = await h.call(method, `${PREFIX}/${id}`, { body });
          expect(res.status).toBe(404);
          expect(res.json.error.code).toBe("not_found");
        }
      }
    });

    test("patch keeps omitted fields, replaces the requirement list, bumps version only on change", async () => {
      const h = await makeHarness({}, engine);
      const pi = await h.create({ description: "first" });
      const renamed = await h.call("PATCH", `${PREFIX}/${pi.id}`, { body: { name: "Renamed" } });
      expect(renamed.status).toBe(200);
      expect(renamed.json.data).toMatchObject({
        name: "Renamed",
        description: "first",
        version: 2,
        created_at: pi.created_at,
      });
      expect(renamed.json.data.payment_requirements).toEqual(pi.payment_requirements);

      const same = await h.call("PATCH", `${PREFIX}/${pi.id}`, { body: { name: "Renamed" } });
      expect(same.json.data.version).toBe(2);
      // same requirement written differently (lower case, other spelling) is no change either
      const sameReq = await h.call("PATCH", `${PREFIX}/${pi.id}`, {
        body: { payment_requirements: [requirement({ network: "eip155:84532" })] },
      });
      expect(sameReq.json.data.version).toBe(2);

      const replaced = await h.call("PATCH", `${PREFIX}/${pi.id}`, {
        body: { payment_requirements: [requirement({ network: "base", asset: BASE_USDC, amount: "5" })] },
      });
      expect(replaced.json.data.version).toBe(3);
      expect(replaced.json.data.payment_requirements).toEqual([
        { network: "base", asset: BASE_USDC, pay_to: PAY_TO, amount: "5" },
      ]);
      expect(replaced.json.data.name).toBe("Renamed");

      const cleared = await h.call("PATCH", `${PREFIX}/${pi.id}`, { body: { description: null } });
      expect(cleared.json.data.version).toBe(4);
      expect(cleared.json.data.description).toBeUndefined();
      expect((await h.call("GET", `${PREFIX}/${pi.id}`)).json.data).toEqual(cleared.json.data);
    });

    test("patch with an empty body or no body is a 400", async () => {
      const h = await makeHarness({}, engine);
      const pi = await h.create();
      const before = await h.snapshot();
      expect((await h.call("PATCH", `${PREFIX}/${pi.id}`, { body: {} })).status).toBe(400);
      expect((await h.call("PATCH", `${PREFIX}/${pi.id}`)).status).toBe(400);
      expect(await h.snapshot()).toBe(before);
    });

    test("delete answers {data:{}} and the instruction is gone; 409 while CIDs are attached", async () => {
      const h = await makeHarness({}, engine);
      const pi = await h.create();
      await h.call("PUT", `${PREFIX}/${pi.id}/cids/${CID_V1}`);
      const before = await h.snapshot();
      const blocked = await h.call("DELETE", `${PREFIX}/${pi.id}`);
      expect(blocked.status).toBe(409);
      expect(blocked.json.error.code).toBe("conflict");
      expect(await h.snapshot()).toBe(before);
      await h.call("DELETE", `${PREFIX}/${pi.id}/cids/${CID_V1}`);
      const ok = await h.call("DELETE", `${PREFIX}/${pi.id}`);
      expect(ok.status).toBe(200);
      expect(ok.json).toEqual({ data: {} });
      expect((await h.call("GET", `${PREFIX}/${pi.id}`)).status).toBe(404);
    });
  });

  describe("CIDs", () => {
    test("attach answers the association; idempotent for the same instruction", async () => {
      const h = await makeHarness({}, engine);
      const pi = await h.create();
      const first = await h.call("PUT", `${PREFIX}/${pi.id}/cids/${CID_V1}`);
      expect(first.status).toBe(200);
      expect(first.json.data).toEqual({
        payment_instruction_id: pi.id,
        cid: CID_V1,
        created_at: expect.stringMatching(ISO_UTC),
      });
      const again = await h.call("PUT", `${PREFIX}/${pi.id}/cids/${CID_V1}`);
      expect(again.status).toBe(200);
      expect(again.json).toEqual(first.json);
      expect(JSON.parse(await h.snapshot()).cids).toHaveLength(1);
    });

    test("a CID of another instruction is a 409 and stays where it was", async () => {
      const h = await makeHarness({}, engine);
      const a = await h.create({ name: "a" });
      const b = await h.create({ name: "b" });
      await h.call("PUT", `${PREFIX}/${a.id}/cids/${CID_V1}`);
      const before = await h.snapshot();
      const res = await h.call("PUT", `${PREFIX}/${b.id}/cids/${CID_V1}`);
      expect(res.status).toBe(409);
      expect(res.json.error.message).toContain(a.id);
      expect(await h.snapshot()).toBe(before);
    });

    test("CIDs are parsed: v0 and v1 accepted (v1 normalized to base32), anything else 400", async () => {
      const h = await makeHarness({}, engine);
      const pi = await h.create();
      expect((await h.call("PUT", `${PREFIX}/${pi.id}/cids/${CID_V0}`)).json.data.cid).toBe(CID_V0);
      // the same v1 CID in base36 is stored in its base32 form
      const { CID } = await import("multiformats/cid");
      const { base36 } = await import("multiformats/bases/base36");
      const v1 = "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi";
      const b36 = CID.parse(v1).toString(base36);
      expect((await h.call("PUT", `${PREFIX}/${pi.id}/cids/${b36}`)).json.data.cid).toBe(v1);
      const before = await h.snapshot();
      for (const bad of ["hello", "bafy", "Qm123", "0x1234"]) {
        const res = await h.call("PUT", `${PREFIX}/${pi.id}/cids/${bad}`);
        expect(res.status).toBe(400);
        expect(res.json.error.details[0].path).toBe("cid");
      }
      expect(await h.snapshot()).toBe(before);
    });

    test("detach removes it (404 when not attached); list pages through CIDs", async () => {
      const h = await makeHarness({}, engine);
      const pi = await h.create();
      const { CID } = await import("multiformats/cid");
      const { sha256 } = await import("multiformats/hashes/sha2");
      const cids: string[] = [];
      for (let i = 0; i < 25; i++) {
        const cid = CID.createV1(0x55, await sha256.digest(new TextEncoder().encode(`file ${i}`))).toString();
        cids.push(cid);
        expect((await h.call("PUT", `${PREFIX}/${pi.id}/cids/${cid}`)).status).toBe(200);
      }
      const page1 = await h.call("GET", `${PREFIX}/${pi.id}/cids`);
      expect(page1.json.data.cids).toHaveLength(20); // default limit
      const page2 = await h.call("GET", `${PREFIX}/${pi.id}/cids?pageToken=${page1.json.data.next_page_token}`);
      expect(page2.json.data.cids).toHaveLength(5);
      expect("next_page_token" in page2.json.data).toBe(false);
      expect([...page1.json.data.cids, ...page2.json.data.cids].sort()).toEqual([...cids].sort());

      const gone = await h.call("DELETE", `${PREFIX}/${pi.id}/cids/${cids[0]}`);
      expect(gone.status).toBe(200);
      expect(gone.json).toEqual({ data: {} });
      expect((await h.call("DELETE", `${PREFIX}/${pi.id}/cids/${cids[0]}`)).status).toBe(404);
      const small = await h.call("GET", `${PREFIX}/${pi.id}/cids?limit=1000`);
      expect(small.json.data.cids).toHaveLength(24);
      expect(small.json.data.cids).not.toContain(cids[0]);
    });

    test("CID routes of an unknown instruction are 404", async () => {
      const h = await makeHarness({}, engine);
      const id = "01900000-0000-7000-8000-000000000000";
      expect((await h.call("PUT", `${PREFIX}/${id}/cids/${CID_V1}`)).status).toBe(404);
      expect((await h.call("DELETE", `${PREFIX}/${id}/cids/${CID_V1}`)).status).toBe(404);
      expect((await h.call("GET", `${PREFIX}/${id}/cids`)).status).toBe(404);
    });
  });

  describe("list", () => {
    test("newest first, keyset pages, next_page_token omitted on the last page", async () => {
      const h = await makeHarness({}, engine);
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) ids.push((await h.create({ name: `n${i}` })).id);
      const newestFirst = [...ids].reverse();
      const p1 = await h.call("GET", `${PREFIX}?limit=3`);
      expect(p1.json.data.payment_instructions.map((p: { id: string }) => p.id)).toEqual(newestFirst.slice(0, 3));
      const p2 = await h.call("GET", `${PREFIX}?limit=3&pageToken=${p1.json.data.next_page_token}`);
      expect(p2.json.data.payment_instructions.map((p: { id: string }) => p.id)).toEqual(newestFirst.slice(3, 6));
      const p3 = await h.call("GET", `${PREFIX}?limit=3&pageToken=${p2.json.data.next_page_token}`);
      expect(p3.json.data.payment_instructions.map((p: { id: string }) => p.id)).toEqual(newestFirst.slice(6));
      expect(p3.json.data).not.toHaveProperty("next_page_token");
      // exactly a full last page also has no token
      const all = await h.call("GET", `${PREFIX}?limit=7`);
      expect(all.json.data.payment_instructions).toHaveLength(7);
      expect(all.json.data).not.toHaveProperty("next_page_token");
      // default limit is 10
      for (let i = 0; i < 5; i++) await h.create();
      expect((await h.call("GET", PREFIX)).json.data.payment_instructions).toHaveLength(10);
    });

    test("pages stay correct while instructions are added or removed between calls", async () => {
      const h = await makeHarness({}, engine);
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) ids.push((await h.create({ name: `n${i}` })).id);
      const p1 = await h.call("GET", `${PREFIX}?limit=2`); // n5, n4
      await h.create({ name: "new" }); // newer than everything: must not appear on later pages
      await h.call("DELETE", `${PREFIX}/${ids[3]}`); // n3, the next one, disappears
      const p2 = await h.call("GET", `${PREFIX}?limit=2&pageToken=${p1.json.data.next_page_token}`);
      expect(p2.json.data.payment_instructions.map((p: { name: string }) => p.name)).toEqual(["n2", "n1"]);
      const p3 = await h.call("GET", `${PREFIX}?limit=2&pageToken=${p2.json.data.next_page_token}`);
      expect(p3.json.data.payment_instructions.map((p: { name: string }) => p.name)).toEqual(["n0"]);
      expect(p3.json.data).not.toHaveProperty("next_page_token");
    });

    test("filters: cid (at most one), name, id; combined with paging", async () => {
      const h = await makeHarness({}, engine);
      const a = await h.create({ name: "alpha" });
      const b1 = await h.create({ name: "beta" });
      const b2 = await h.create({ name: "beta" });
      await h.call("PUT", `${PREFIX}/${b1.id}/cids/${CID_V1}`);
      const byCid = await h.call("GET", `${PREFIX}?cid=${CID_V1}`);
      expect(byCid.json.data.payment_instructions.map((p: { id: string }) => p.id)).toEqual([b1.id]);
      expect((await h.call("GET", `${PREFIX}?cid=${CID_V0}`)).json.data.payment_instructions).toEqual([]);
      const byName = await h.call("GET", `${PREFIX}?name=beta&limit=1`);
      expect(byName.json.data.payment_instructions.map((p: { id: string }) => p.id)).toEqual([b2.id]);
      const byName2 = await h.call("GET", `${PREFIX}?name=beta&limit=1&pageToken=${byName.json.data.next_page_token}`);
      expect(byName2.json.data.payment_instructions.map((p: { id: string }) => p.id)).toEqual([b1.id]);
      expect(byName2.json.data).not.toHaveProperty("next_page_token");
      const byId = await h.call("GET", `${PREFIX}?id=${a.id}`);
      expect(byId.json.data.payment_instructions.map((p: { id: string }) => p.id)).toEqual([a.id]);
      expect((await h.call("GET", `${PREFIX}?id=${a.id}&name=beta`)).json.data.payment_instructions).toEqual([]);
    });
  });

  describe("instructions declared in a pricing file", () => {
    /** What a pricing reload writes: one file-declared instruction holding CID_V1. */
    async function seedFileInstruction(h: Awaited<ReturnType<typeof makeHarness>>) {
      const requirements = [
        { network: "base-sepolia" as const, asset: BASE_SEPOLIA_USDC, pay_to: PAY_TO, amount: "10000" },
      ];
      const synced = await h.stores.instructions.syncFiles([
        {
          source: "file:prices/premium.yaml#ebook",
          name: "From YAML",
          description: null,
          requirements,
          requirementsJson: JSON.stringify(requirements),
          access: "forever",
          access_scope: "cid",
          cids: [{ cid: CID_V1 }],
        },
      ]);
      if (!synced.ok) throw new Error("seeding the file instruction failed");
      return synced.changes.created[0].id;
    }

    test("reads show the source", async () => {
      const h = await makeHarness({}, engine);
      const id = await seedFileInstruction(h);
      expect((await h.call("GET", `${PREFIX}/${id}`)).json.data.source).toBe("file:prices/premium.yaml#ebook");
    });

    test("patch, delete, attach and detach are 409 naming the file to edit; nothing changes", async () => {
      const h = await makeHarness({}, engine);
      const id = await seedFileInstruction(h);
      const before = await h.snapshot();
      for (const [method, path, body] of [
        ["PATCH", `${PREFIX}/${id}`, { name: "x" }],
        ["DELETE", `${PREFIX}/${id}`],
        ["PUT", `${PREFIX}/${id}/cids/${CID_V0}`],
        ["DELETE", `${PREFIX}/${id}/cids/${CID_V1}`],
      ] as const) {
        const res = await h.call(method, path, { body });
        expect(res.status).toBe(409);
        expect(res.json.error.message).toContain("prices/premium.yaml");
      }
      expect(await h.snapshot()).toBe(before);
    });

    test("attaching its CID to an API instruction is a 409 naming the file", async () => {
      const h = await makeHarness({}, engine);
      await seedFileInstruction(h);
      const pi = await h.create();
      const res = await h.call("PUT", `${PREFIX}/${pi.id}/cids/${CID_V1}`);
      expect(res.status).toBe(409);
      expect(res.json.error.message).toContain("prices/premium.yaml");
    });
  });
});
