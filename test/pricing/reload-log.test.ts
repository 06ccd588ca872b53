/**
 * What a pricing reload says in the log, through the real logger (pino JSON
 * lines, captured instead of printed): a rejected reload is an error naming
 * the file and line, an applied one is info, an unchanged one is quiet, and a
 * warning that persists across reloads is said once. Also `${VAR}` names that
 * are not variable names, refused with the place they are written.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type Db, openDb } from "../../src/db/client";
import { createLogger } from "../../src/http/logging";
import { createPricing } from "../../src/pricing/service";
import { createStores, type SqliteStores } from "../../src/stores";
import { CID_A, instruction, PAY_TO, pricingFile, tempDirs } from "./helpers";

const file = () => join(dirs.configDir, "a.yaml");
const INFO = 30;
const WARN = 40;
const ERROR = 50;

let dirs: ReturnType<typeof tempDirs>;
let db: Db;
let stores: SqliteStores;
let lines: { level: number; msg: string; [k: string]: unknown }[];

beforeEach(() => {
  dirs = tempDirs();
  db = openDb(":memory:");
  stores = createStores(db, dirs.settings);
  lines = [];
});
afterEach(() => {
  db.sqlite.close();
  dirs.cleanup();
});

function pricingWithLog(env: Record<string, string> = {}) {
  const log = createLogger("info", {
    write(text: string) {
      for (const line of text.split("\n")) if (line) lines.push(JSON.parse(line));
    },
  });
  return createPricing({ ...stores, settings: dirs.settings, env, log });
}
/** The lines logged by `run`, as [level, message]. */
async function said(run: () => unknown) {
  const from = lines.length;
  await run();
  return lines.slice(from).map((l) => [l.level, l.msg] as const);
}

describe("pricing reload log lines", () => {
  test("applied -> info, unchanged -> nothing, rejected -> one error naming file and line; the last good state serves", async () => {
    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_A] })));
    const pricing = pricingWithLog();
    expect(await said(() => pricing.reload("start"))).toEqual([[INFO, "pricing reloaded"]]);
    expect(lines.at(-1)).toMatchObject({ trigger: "start", result: "applied", created: 1, instructions: 1, cids: 1 });

    expect(await said(() => pricing.reload("config"))).toEqual([]); // nothing changed: nothing said

    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_A], price: "$0.02" })));
    expect(await said(() => pricing.reload("config"))).toEqual([[INFO, "pricing reloaded"]]);
    expect(lines.at(-1)).toMatchObject({ trigger: "config", result: "applied", updated: 1 });

    dirs.write("a.yaml", "instructions:\n  one: [broken\n");
    expect(await said(() => pricing.reload("config"))).toEqual([
      [ERROR, "pricing reload rejected; the last good state keeps serving"],
    ]);
    const rejected = lines.at(-1)!;
    expect(rejected).toMatchObject({ trigger: "config", result: "rejected" });
    expect(rejected.errors).toEqual([expect.stringMatching(new RegExp(`^${file()}:\\d+:\\d+: `))]);
    expect(stores.instructions.forCid(CID_A)?.requirements[0].amount).toBe("20000");
  });

  test("a warning that persists across reloads is said once; a new one is said", async () => {
    dirs.write(
      "a.yaml",
      pricingFile(instruction("one", { cids: [CID_A] }), instruction("docs", { files: ["nothing/*.md"] })),
    );
    const pricing = pricingWithLog();
    const first = await said(() => pricing.reload("start"));
    const warnings = first.filter(([level]) => level === WARN);
    expect(warnings).toHaveLength(1);
    expect(warnings[0][1]).toStartWith(`${file()}:`);
    expect(warnings[0][1]).toContain('"nothing/*.md" matches no file');

    // the same file again, and a real change: the warning still holds, and is not repeated
    expect(await said(() => pricing.reload("content"))).toEqual([]);
    dirs.write(
      "a.yaml",
      pricingFile(
        instruction("one", { cids: [CID_A], price: "$0.03" }),
        instruction("docs", { files: ["nothing/*.md"] }),
      ),
    );
    expect(await said(() => pricing.reload("config"))).toEqual([[INFO, "pricing reloaded"]]);

    // a second glob matching nothing: only the new warning is said
    dirs.write(
      "a.yaml",
      pricingFile(
        instruction("one", { cids: [CID_A], price: "$0.03" }),
        instruction("docs", { files: ["nothing/*.md"] }),
        instruction("more", { files: ["none/*.txt"] }),
      ),
    );
    const next = (await said(() => pricing.reload("config"))).filter(([level]) => level === WARN);
    expect(next).toHaveLength(1);
    expect(next[0][1]).toContain("none/*.txt");
  });
});

describe("${VAR} names", () => {
  test("`${1X}` is not a variable reference: the reload is rejected at its line, even with 1X in the environment", async () => {
    dirs.write("a.yaml", pricingFile(instruction("one", { cids: [CID_A] })));
    const pricing = pricingWithLog({ "1X": PAY_TO });
    expect((await pricing.reload("start")).result).toBe("applied");
    dirs.write(
      "a.yaml",
      pricingFile(instruction("one", { cids: [CID_A] })).replace(`pay_to: "${PAY_TO}"`, 'pay_to: "${1X}"'),
    );
    const report = await pricing.reload("config");
    expect(report.result).toBe("rejected");
    expect(report.errors).toEqual([
      expect.objectContaining({ file: file(), line: 3, message: '"${1X}" is not a valid variable reference' }),
    ]);
    expect(stores.instructions.forCid(CID_A)?.requirements[0].pay_to.toLowerCase()).toBe(PAY_TO);
  });
});
