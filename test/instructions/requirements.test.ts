import { describe, expect, test } from "bun:test";
import { normalizeRequirement, normalizeRequirements } from "../../src/instructions/requirements";
import { loadSettings } from "../../src/settings";
import { BASE_SEPOLIA_USDC, BASE_USDC, CID_V1, makeHarness, PAY_TO, PREFIX } from "./harness";

const settings = loadSettings({});
const base = { network: "base", asset: BASE_USDC.toLowerCase(), pay_to: PAY_TO.toLowerCase(), amount: "10000" };

describe("normalizeRequirement (shared with the pricing loader)", () => {
  test("returns the stored shape: canonical network, EIP-55 addresses, canonical amount", () => {
    expect(
      normalizeRequirement({ ...base, network: "eip155:8453", amount: "0010000", description: "fee" }, settings),
    ).toEqual({
      ok: true,
      value: { network: "base", asset: BASE_USDC, pay_to: PAY_TO, amount: "10000", description: "fee" },
    });
  });

  test("a whole number amount (YAML `amount: 10000`) is accepted; a fraction is not", () => {
    const r = normalizeRequirement({ ...base, amount: 10000 }, settings);
    expect(r.ok && r.value.amount).toBe("10000");
    const f = normalizeRequirement({ ...base, amount: 0.01 }, settings);
    expect(f.ok).toBe(false);
    expect(!f.ok && f.errors[0].path).toBe("amount");
  });

  test("errors carry the given path prefix and name each field; unknown fields are named", () => {
    const r = normalizeRequirement(
      { network: "mainnet", asset: "0x12", pay_to: PAY_TO, amount: "1", payTo: "x" },
      settings,
      "ebook.requirements.0",
    );
    expect(r.ok).toBe(false);
    const paths = !r.ok ? r.errors.map((e) => e.path) : [];
    expect(paths).toEqual(
      expect.arrayContaining([
        "ebook.requirements.0.network",
        "ebook.requirements.0.asset",
        "ebook.requirements.0.payTo",
      ]),
    );
    expect(!r.ok && r.errors.find((e) => e.path.endsWith("payTo"))?.message).toBe("unknown field");
  });

  test("USDC of the wrong network, USDC overrides, amount above uint256, both amount spellings disagreeing", () => {
    const wrong = normalizeRequirement({ ...base, asset: BASE_SEPOLIA_USDC }, settings);
    expect(!wrong.ok && wrong.errors[0]).toEqual({
      path: "asset",
      message: `must be the USDC contract on base (${BASE_USDC})`,
    });
    const local = loadSettings({ USDC_ADDRESS_BASE: "0x5FbDB2315678afecb367f032d93F642f64180aa3" });
    expect(normalizeRequirement({ ...base, asset: "0x5fbdb2315678afecb367f032d93f642f64180aa3" }, local).ok).toBe(true);
    expect(normalizeRequirement(base, local).ok).toBe(false);
    expect(normalizeRequirement({ ...base, amount: (2n ** 256n).toString() }, settings).ok).toBe(false);
    const both = normalizeRequirement({ ...base, max_amount_required: "5" }, settings);
    expect(!both.ok && both.errors[0].path).toBe("max_amount_required");
    expect(normalizeRequirement({ ...base, max_amount_required: "10000" }, settings).ok).toBe(true);
  });

  test("not an object", () => {
    for (const v of [null, "base", 5, []]) expect(normalizeRequirement(v, settings).ok).toBe(false);
  });

  test("normalizeRequirements refuses two requirements for the same network, asset and receiver", () => {
    const r = normalizeRequirements([base, { ...base, network: "eip155:8453", amount: "1" }], settings);
    expect(!r.ok && r.errors[0].path).toBe("payment_requirements.1");
    expect(normalizeRequirements([base, { ...base, pay_to: BASE_USDC }], settings).ok).toBe(true);
  });
});

describe("forCid (the gateway's read)", () => {
  test("finds the instruction by any spelling of the CID; undefined for unknown or invalid", async () => {
    const h = await makeHarness();
    const pi = await h.create();
    await h.call("PUT", `${PREFIX}/${pi.id}/cids/${CID_V1}`);
    const found = h.stores.instructions.forCid(CID_V1);
    expect(found).toMatchObject({ id: pi.id, version: 1, name: "Premium", source: "api" });
    expect(found?.requirements[0]).toEqual({
      network: "base-sepolia",
      asset: BASE_SEPOLIA_USDC,
      pay_to: PAY_TO,
      amount: "10000",
    });
    const { CID } = await import("multiformats/cid");
    const { base36 } = await import("multiformats/bases/base36");
    expect(h.stores.instructions.forCid(CID.parse(CID_V1).toString(base36))?.id).toBe(pi.id);
    expect(h.stores.instructions.forCid("bafkreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")).toBeUndefined();
    expect(h.stores.instructions.forCid("nope")).toBeUndefined();
  });
});

describe("the catalog signal", () => {
  test("moves once per committed write; not for a write that changed nothing or was refused", async () => {
    const h = await makeHarness();
    const { changes, instructions } = h.stores;
    const at = () => changes.generation;
    const pi = await h.create();
    expect(at()).toBe(1);
    instructions.attachCid(pi.id, CID_V1);
    expect(at()).toBe(2);
    instructions.attachCid(pi.id, CID_V1); // idempotent repeat: nothing written
    instructions.update(pi.id, { name: "Premium" }); // same name: nothing written
    expect(() => instructions.remove(pi.id)).toThrow(); // 409: CIDs attached
    expect(at()).toBe(2);
    instructions.update(pi.id, { name: "Gold" });
    instructions.detachCid(pi.id, CID_V1);
    instructions.remove(pi.id);
    expect(at()).toBe(5);
  });
});
