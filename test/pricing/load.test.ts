import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { formatProblem, type LoadOptions, loadPricing } from "../../src/pricing/load";
import { CID_A, CID_B, instruction, OTHER, PAY_TO, pricingFile, tempDirs, USDC } from "./helpers";

let dirs: ReturnType<typeof tempDirs>;
beforeEach(() => {
  dirs = tempDirs();
});
afterEach(() => dirs.cleanup());

const load = (over: Partial<LoadOptions> = {}) =>
  loadPricing({ configDir: dirs.configDir, settings: dirs.settings, env: {}, content: [], ...over });

describe("loading pricing files", () => {
  test("defaults, price and env give the stored requirement shape", () => {
    dirs.write(
      "shop.yaml",
      `defaults:
  network: eip155:84532
  pay_to: \${SELLER}
instructions:
  essay:
    name: An essay
    description: about things
    payment_requirements:
      - price: "$0.05"
        description: one read
      - network: base
        pay_to: "${OTHER.toLowerCase()}"
        amount: 1234567890123456789012
    cids: [${CID_A}]
`,
    );
    const loaded = load({ env: { SELLER: PAY_TO } });
    expect(loaded.errors).toEqual([]);
    expect(loaded.files).toEqual(["shop.yaml"]);
    const [essay] = loaded.instructions;
    expect(essay).toMatchObject({
      source: "file:shop.yaml#essay",
      key: "essay",
      name: "An essay",
      description: "about things",
    });
    expect(essay.requirements).toEqual([
      { network: "base-sepolia", asset: USDC, pay_to: PAY_TO, amount: "50000", description: "one read" },
      // A YAML integer past 2^53 keeps every digit; addresses come back checksummed.
      {
        network: "base",
        asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        pay_to: OTHER,
        amount: "1234567890123456789012",
      },
    ]);
    expect(essay.cids.map((c) => c.cid)).toEqual([CID_A]);
  });

  test("prices are exact: $0.000001 is 1; finer, zero or negative is an error, never rounded", () => {
    dirs.write(
      "a.yaml",
      pricingFile(instruction("tiny", { price: "$0.000001" }), instruction("big", { price: "$1234.5" })),
    );
    const ok = load();
    expect(ok.errors).toEqual([]);
    expect(ok.instructions.map((i) => i.requirements[0].amount)).toEqual(["1", "1234500000"]);

    for (const [price, why] of [
      ["$0.0000001", /finer than six decimals/],
      ["$0", /more than \$0/],
      ["-$1", /negative/],
      ["$-0.5", /negative/],
      ["0.05", /leading "\$"/],
    ] as const) {
      dirs.write("a.yaml", pricingFile(instruction("x", { price })));
      const r = load();
      expect(r.errors).toHaveLength(1);
      expect(r.errors[0]).toMatchObject({ rule: expect.stringMatching(/price|format/), line: 8 });
      expect(r.errors[0].message).toMatch(why);
    }
  });

  test("every error in every file is reported together with file, line, column and rule", () => {
    dirs.write(
      "a.yaml",
      `instructions:
  one:
    name: One
    payment_requirements:
      - price: "$0.01"
        network: solana
        pay_to: "${PAY_TO}"
  two:
    name: Two
    colour: blue
    payment_requirements:
      - amount: 5
        price: "$1"
        network: base
        pay_to: "${PAY_TO}"
`,
    );
    dirs.write("nested/b.yml", "instructions:\n  three:\n    name: [unclosed\n");
    dirs.write(
      "c.yaml",
      `instructions:\n  four:\n    name: Four\n    payment_requirements:\n      - price: "$0.01"\n        network: base\n        pay_to: \${NOPE}\n`,
    );
    const r = load();
    const lines = r.errors.map(formatProblem);
    expect(lines).toContainEqual(
      expect.stringMatching(/^.*config\/a\.yaml:6:18: .*network.*base, base-sepolia.* \[type\]$/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^.*config\/a\.yaml:10:5: .*unknown field "colour" \[unknown-field\]$/),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^.*config\/nested\/b\.yml:\d+:\d+: .* \[yaml\]$/));
    expect(lines).toContainEqual(
      expect.stringMatching(/^.*config\/c\.yaml:7:17: environment variable NOPE is not set \[env\]$/),
    );
    expect(r.errors.length).toBeGreaterThanOrEqual(4);
  });

  test("amount and price together, or neither, is an error at the requirement", () => {
    dirs.write(
      "a.yaml",
      pricingFile(
        `  both:\n    name: Both\n    payment_requirements:\n      - price: "$1"\n        amount: 5`,
        `  neither:\n    name: Neither\n    payment_requirements:\n      - description: free?`,
      ),
    );
    const r = load();
    expect(r.errors.map((e) => [e.line, e.rule])).toEqual([
      [9, "price-or-amount"],
      [13, "price-or-amount"],
    ]);
  });

  test("a wrong value inherited from defaults is reported where it is written", () => {
    dirs.write(
      "a.yaml",
      `defaults:\n  network: base\n  pay_to: "0x0000000000000000000000000000000000000000"\ninstructions:\n${instruction("x", { cids: [CID_A] })}\n`,
    );
    const r = load();
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ line: 3, column: 11, rule: "requirement" });
    expect(r.errors[0].message).toMatch(/zero address/);
  });

  test("files: globs map content files to CIDs; paths that leave the folder are refused", () => {
    dirs.write(
      "a.yaml",
      pricingFile(instruction("docs", { files: ["articles/*.md", "./readme.txt", "nothing/*.bin"] })),
    );
    const content = [
      { path: "articles/a.md", cid: CID_A },
      { path: "articles/deep/b.md", cid: "bafkreidgvpkjawlxz6sffxzwgooowe5yt7i6wsyg236mfoks77nywkptdq" },
      { path: "readme.txt", cid: CID_B },
    ];
    const r = load({ content });
    expect(r.errors).toEqual([]);
    expect(r.instructions[0].cids.map((c) => [c.cid, c.via])).toEqual([
      [CID_A, "articles/a.md"],
      [CID_B, "readme.txt"],
    ]);
    expect(r.warnings.map((w) => w.message)).toEqual(['"nothing/*.bin" matches no file in the content folder (yet)']);

    for (const bad of ["../secret/*", "/etc/passwd", "a/../../b", ".git/*"]) {
      dirs.write("a.yaml", pricingFile(instruction("docs", { files: [bad] })));
      const e = load({ content }).errors;
      expect(e).toHaveLength(1);
      expect(e[0]).toMatchObject({ rule: "files", line: 10 });
    }
  });

  test("the same CID in two instructions rejects the load, naming both places", () => {
    dirs.write("a.yaml", pricingFile(instruction("first", { cids: [CID_A] })));
    dirs.write("b.yaml", pricingFile(instruction("second", { files: ["x.txt"] })));
    const r = load({ content: [{ path: "x.txt", cid: CID_A }] });
    expect(r.errors).toHaveLength(1);
    expect(formatProblem(r.errors[0])).toMatch(
      /b\.yaml:10:9: CID bafkrei\S+ \(x\.txt\) is declared twice: by "second" at \S*b\.yaml:10:9 via x\.txt and by "first" at \S*a\.yaml:10:9 \[duplicate-cid\]/,
    );
  });

  test("unknown keys, bad instruction keys, bad CIDs and duplicate keys are errors", () => {
    dirs.write(
      "a.yaml",
      `instructions:\n  "bad key!":\n    name: X\n    payment_requirements: [{price: "$1", network: base, pay_to: "${PAY_TO}"}]\n`,
    );
    dirs.write("b.yaml", pricingFile(instruction("x", { cids: ["not-a-cid"] })));
    dirs.write(
      "c.yaml",
      `instructions:\n  a: {name: A, payment_requirements: [{price: "$1", network: base, pay_to: "${PAY_TO}"}]}\n  a: {name: B, payment_requirements: [{price: "$1", network: base, pay_to: "${PAY_TO}"}]}\n`,
    );
    dirs.write("d.yaml", "pricing: yes\n");
    const r = load();
    const byFile = Object.fromEntries(r.errors.map((e) => [e.file.split("/").pop(), e]));
    expect(byFile["a.yaml"]).toMatchObject({ line: 2, column: 3 });
    expect(byFile["a.yaml"].message).toMatch(/instruction key "bad key!"/);
    expect(byFile["b.yaml"]).toMatchObject({ line: 10, rule: "cid" });
    expect(byFile["c.yaml"]).toMatchObject({ line: 3, rule: "yaml" });
    expect(byFile["d.yaml"]).toMatchObject({ line: 1, column: 1, rule: "unknown-field" });
  });

  test("an empty folder, an empty file and hidden files declare nothing", () => {
    expect(load()).toMatchObject({ files: [], instructions: [], errors: [] });
    dirs.write("empty.yaml", "# nothing yet\n");
    dirs.write(".hidden.yaml", "garbage: [");
    dirs.write("notes.txt", "garbage: [");
    expect(load()).toMatchObject({ files: ["empty.yaml"], instructions: [], errors: [] });
  });
});
