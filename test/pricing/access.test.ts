/**
 * `access:` and `access_scope:` in pricing files: defaults, the API's own
 * rule with file:line:column errors, and a reconcile that stores the policy
 * and bumps the version when it changes.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { formatProblem, loadPricing } from "../../src/pricing/load";
import { createPricing } from "../../src/pricing/service";
import type { Stores } from "../../src/stores";
import { closeEngineStores, engineStores, enginesHere } from "../instructions/engines";
import { CID_A, instruction, pricingFile, tempDirs } from "./helpers";

let dirs: ReturnType<typeof tempDirs>;
beforeEach(() => {
  dirs = tempDirs();
});
afterEach(() => dirs.cleanup());
afterEach(closeEngineStores);

const engines = await enginesHere("pricing access reconcile");

const load = () => loadPricing({ configDir: dirs.configDir, settings: dirs.settings, env: {}, content: [] });

/** An instruction block with extra lines (already indented under the instruction). */
const withLines = (key: string, ...lines: string[]) => [instruction(key), ...lines].join("\n");
/** The same, selling CID_A (for the reconcile, which reads instructions back by CID). */
const selling = (key: string, ...lines: string[]) => [instruction(key, { cids: [CID_A] }), ...lines].join("\n");

describe("access in pricing files", () => {
  test("omitted: forever and cid; given: as written", () => {
    dirs.write("a.yaml", pricingFile(instruction("plain")));
    dirs.write("b.yaml", pricingFile(withLines("month", "    access: 30d", "    access_scope: instruction")));
    dirs.write("c.yaml", pricingFile(withLines("single", '    access: "once"')));
    const r = load();
    expect(r.errors).toEqual([]);
    const by = Object.fromEntries(r.instructions.map((i) => [i.key, [i.access, i.access_scope]]));
    expect(by).toEqual({ plain: ["forever", "cid"], month: ["30d", "instruction"], single: ["once", "cid"] });
  });

  test("a bad access or access_scope is an error at its file, line and column", () => {
    // instruction() is 4 lines under "instructions:" (line 4): the extra lines start at line 9.
    dirs.write("a.yaml", pricingFile(withLines("bare", "    access: 30")));
    dirs.write("b.yaml", pricingFile(withLines("zero", "    access: 0d")));
    dirs.write("c.yaml", pricingFile(withLines("scope", "    access_scope: everything")));
    const r = load();
    const lines = r.errors.map(formatProblem);
    expect(r.instructions).toEqual([]);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /config\/a\.yaml:9:13: instructions\.bare\.access: must be .*unit m, h, d or w.*\(got "30"\) \[access\]$/,
    );
    expect(lines[1]).toMatch(/config\/b\.yaml:9:13: instructions\.zero\.access: .*\(got "0d"\) \[access\]$/);
    expect(lines[2]).toMatch(
      /config\/c\.yaml:9:19: instructions\.scope\.access_scope: must be "cid" or "instruction" \[/,
    );
  });
});

describe.each(engines)("%s: reconciling access", (engine) => {
  let stores: Stores;
  beforeEach(async () => {
    stores = (await engineStores(engine, dirs.settings)).stores;
  });

  test("stored on create; a changed policy bumps the version, an unchanged reload writes nothing", async () => {
    const pricing = createPricing({ ...stores, settings: dirs.settings, env: {} });
    dirs.write("a.yaml", pricingFile(selling("one", "    access: 30d")));
    expect((await pricing.reload("start")).result).toBe("applied");
    expect(await stores.instructions.forCid(CID_A)).toMatchObject({ version: 1, access: "30d", access_scope: "cid" });

    expect((await pricing.reload("manual")).changes.updated).toEqual([]);

    dirs.write("a.yaml", pricingFile(selling("one", "    access: 30d", "    access_scope: instruction")));
    const scoped = await pricing.reload("manual");
    expect(scoped.changes.updated.map((c) => c.version)).toEqual([2]);
    expect(await stores.instructions.forCid(CID_A)).toMatchObject({ version: 2, access_scope: "instruction" });

    // Dropping the lines is going back to the defaults: a change too.
    dirs.write("a.yaml", pricingFile(selling("one")));
    await pricing.reload("manual");
    expect(await stores.instructions.forCid(CID_A)).toMatchObject({
      version: 3,
      access: "forever",
      access_scope: "cid",
    });
  });
});
