import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pricingJsonSchema } from "../../src/pricing/json-schema";
import { parsePricingFile } from "../../src/pricing/load";
import { loadSettings } from "../../src/settings";
import { instruction, PAY_TO, pricingFile, tempDirs } from "./helpers";

const ROOT = join(import.meta.dir, "../..");
let dirs: ReturnType<typeof tempDirs>;
beforeEach(() => {
  dirs = tempDirs();
});
afterEach(() => dirs.cleanup());

function cidgate(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawnSync([process.execPath, join(ROOT, "src/cli/main.ts"), ...args], {
    cwd: dirs.base,
    env: { PATH: process.env.PATH ?? "", CIDGATE_CONTENT_DIR: dirs.contentDir, CIDGATE_DB: ":memory:", ...env },
  });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

describe("cidgate config check", () => {
  test("exits 0 for valid files and 1 with every error as file:line:column", () => {
    dirs.write("ok.yaml", pricingFile(instruction("one", { files: ["*.md"] })));
    dirs.write("a.md", "hi", dirs.contentDir);
    const ok = cidgate(["config", "check", dirs.configDir]);
    expect(ok.err).toBe("");
    expect(ok.code).toBe(0);
    expect(ok.out).toContain("1 file(s), 1 instruction(s), 1 CID(s)");

    dirs.write(
      "bad.yaml",
      pricingFile(instruction("two", { price: "$0.0000001" }), instruction("three", { price: "-$1" })),
    );
    const bad = cidgate(["config", "check", dirs.configDir]);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain(`${dirs.configDir}/bad.yaml:8:16: instructions.two.payment_requirements.0.price:`);
    expect(bad.err).toContain(`${dirs.configDir}/bad.yaml:12:16:`);
    expect(bad.err).toContain("2 error(s)");
  });

  test("uses CIDGATE_CONFIG_DIR and the environment for ${VAR}", () => {
    dirs.write("a.yaml", `defaults:\n  network: base\n  pay_to: \${SELLER}\ninstructions:\n${instruction("x")}\n`);
    expect(cidgate(["config", "check"], { CIDGATE_CONFIG_DIR: dirs.configDir }).err).toContain(
      "environment variable SELLER is not set [env]",
    );
    expect(cidgate(["config", "check"], { CIDGATE_CONFIG_DIR: dirs.configDir, SELLER: PAY_TO }).code).toBe(0);
    expect(cidgate(["config", "frobnicate"]).code).toBe(2);
  });
});

describe("cidgate content add", () => {
  test("copies the file in and prints its CID, which a server would index", () => {
    dirs.write("hello.txt", "hello world", dirs.base);
    const r = cidgate(["content", "add", join(dirs.base, "hello.txt"), "--as", "notes/hello.txt"]);
    expect(r.code).toBe(0);
    expect(r.out).toBe("bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e\n");
    expect(readFileSync(join(dirs.contentDir, "notes/hello.txt"), "utf8")).toBe("hello world");

    // Same bytes again: fine. Other bytes at the same path: refused without --force.
    expect(cidgate(["content", "add", join(dirs.base, "hello.txt"), "--as", "notes/hello.txt"]).code).toBe(0);
    dirs.write("other.txt", "other", dirs.base);
    expect(cidgate(["content", "add", join(dirs.base, "other.txt"), "--as", "notes/hello.txt"]).code).toBe(1);
    expect(cidgate(["content", "add", join(dirs.base, "other.txt"), "--as", "notes/hello.txt", "--force"]).code).toBe(
      0,
    );
    expect(readFileSync(join(dirs.contentDir, "notes/hello.txt"), "utf8")).toBe("other");
  });

  test("refuses a destination outside the content folder", () => {
    dirs.write("x.txt", "x", dirs.base);
    for (const as of ["../escape.txt", "/tmp/abs.txt", ".hidden"]) {
      const r = cidgate(["content", "add", join(dirs.base, "x.txt"), "--as", as]);
      expect(r.code).toBe(2);
      expect(r.out).toBe("");
    }
  });
});

describe("shipped files", () => {
  test("schema/pricing.schema.json is generated from the TypeBox model (run bun scripts/pricing-schema.ts)", () => {
    expect(readFileSync(join(ROOT, "schema/pricing.schema.json"), "utf8")).toBe(pricingJsonSchema());
  });

  test("every complete example in docs/pricing.md is valid", () => {
    const doc = readFileSync(join(ROOT, "docs/pricing.md"), "utf8");
    const examples = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)]
      .map((m) => m[1])
      .filter((y) => /^(#.*\n)*(defaults|instructions):/m.test(y) && !y.includes("<key>") && !y.includes("- uses:"));
    expect(examples.length).toBeGreaterThanOrEqual(3);
    const env = { PAY_TO, TEST_WALLET: PAY_TO };
    for (const [i, text] of examples.entries()) {
      const parsed = parsePricingFile(`example-${i}.yaml`, text, {
        configDir: "config",
        settings: loadSettings({}),
        env,
      });
      expect(parsed.errors).toEqual([]);
      expect(parsed.instructions.length).toBeGreaterThan(0);
    }
  });

  test("the example config prices all three example files", () => {
    const r = Bun.spawnSync([process.execPath, join(ROOT, "src/cli/main.ts"), "config", "check", "config"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", PAY_TO, CIDGATE_CONTENT_DIR: "content" },
    });
    expect(r.stderr.toString()).toBe("");
    expect(r.stdout.toString()).toContain("1 file(s), 3 instruction(s), 3 CID(s)");
  });
});
