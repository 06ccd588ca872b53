/**
 * Pricing files are read by Bun's native YAML parser when plainBlockYaml
 * vouches for them, and by the `yaml` package (exact positions) otherwise.
 * Both must accept and refuse the same files with the same results.
 */
import { describe, expect, test } from "bun:test";
import { plainBlockYaml } from "../../src/pricing/fast-yaml";
import { type ParsedFile, parsePricingFile } from "../../src/pricing/load";
import { loadSettings } from "../../src/settings";
import { CID_A, CID_B, PAY_TO } from "./helpers";

const opts = { configDir: "config", settings: loadSettings({}), env: { SELLER: PAY_TO } };

/** "--- " on the first line makes plainBlockYaml unsure, so this is the slow path on the same document. */
const slow = (text: string) => parsePricingFile("a.yaml", `---\n${text}`, opts);
const fast = (text: string) => parsePricingFile("a.yaml", text, opts);
const comparable = (p: ParsedFile) => ({
  instructions: p.instructions.map(({ at: _at, files, cids, ...rest }) => ({
    ...rest,
    cids: cids.map((c) => c.cid),
    files: files.map((f) => f.pattern),
  })),
  errors: p.errors.map((e) => [e.rule, e.message.replace(/\d+:\d+/g, "")]),
});

const DOCS = {
  plain: `defaults:
  network: base-sepolia
  pay_to: \${SELLER}   # from the environment
instructions:
  one:
    name: "One: the first"
    description: |
      Several lines,
      with: colons and # hashes.
    payment_requirements:
      - price: "$0.05"
        description: 'it''s cheap'
      - network: base
        pay_to: "${PAY_TO}"
        amount: 1234
    cids: [${CID_A}]
  two:
    name: Two
    payment_requirements:
      - amount: "99"
    files:
      - articles/*.md
      - "video/a.avi"
    cids:
      - ${CID_B}
`,
  badValues: `instructions:
  one:
    name: One
    payment_requirements:
      - price: "$0.0000001"
        network: base
        pay_to: "${PAY_TO}"
    cids: [nope]
  two:
    name: Two
    payment_requirements:
      - amount: 0
        network: base
        pay_to: "${PAY_TO}"
`,
  badShape: `instructions:
  one:
    name: ""
    payment_requirements: []
    cids: nope
  two:
    name: Two
    payment_requirements:
      - price: "$1"
        network: base
        pay_to: "0x12"
`,
  unknownField: `instructions:
  one:
    name: One
    colour: red
    payment_requirements:
      - price: "$1"
        network: base
        pay_to: "${PAY_TO}"
`,
};

describe("fast and slow paths agree", () => {
  for (const [name, text] of Object.entries(DOCS)) {
    test(name, () => {
      expect(plainBlockYaml(text)).toBe(true);
      expect(comparable(fast(text))).toEqual(comparable(slow(text)));
    });
  }

  test("an unquoted address is an address, not a hex number", () => {
    const text = DOCS.plain.replace(`"${PAY_TO}"`, PAY_TO).replace('"99"', "0x63");
    expect(plainBlockYaml(text)).toBe(false); // hex-looking literals are read by the strict parser
    const p = fast(text);
    expect(p.instructions[0]?.requirements[1].pay_to).toBe(PAY_TO);
    // ...which reads every hex literal as written: 0x63 is not an amount.
    expect(p.errors.map((e) => e.message)).toEqual([
      expect.stringContaining("instructions.two.payment_requirements.0.amount"),
    ]);
  });

  test("errors found on the fast path still carry exact positions", () => {
    const p = fast(DOCS.badValues);
    expect(p.errors.length).toBeGreaterThan(0);
    for (const e of p.errors) expect(e.line).toBeGreaterThan(0);
    expect(p.errors.map((e) => [e.rule, e.line, e.column])).toEqual([
      ["price", 5, 16],
      ["cid", 8, 12],
      ["requirement", 12, 17],
    ]);
  });
});

describe("plainBlockYaml sends anything doubtful to the strict parser", () => {
  const doubtful = {
    "a repeated instruction key": "instructions:\n  a:\n    name: A\n  a:\n    name: B\n",
    "a repeated field": "instructions:\n  a:\n    name: A\n    name: B\n",
    "a repeated top-level key": "defaults:\n  network: base\ndefaults:\n  network: base\n",
    "a repeated key in a list item": "x:\n  - a: 1\n    a: 2\n",
    "a flow mapping": "instructions: {a: {name: A}}\n",
    "an anchor": "defaults: &d\n  network: base\n",
    "an alias": "x: *d\n",
    "a merge key": "x:\n  <<: *d\n",
    "a tag": "x: !!str 5\n",
    "a hex literal": "x:\n  amount: 0x10\n",
    "several documents": "a: 1\n---\nb: 2\n",
    "a tab": "x:\n\tname: A\n",
    "a quoted scalar over two lines": 'x: "one\n  two"\n',
  };
  for (const [name, text] of Object.entries(doubtful)) test(name, () => expect(plainBlockYaml(text)).toBe(false));

  test("keys repeated in different mappings or list items are fine", () => {
    expect(plainBlockYaml("a:\n  name: A\nb:\n  name: B\nc:\n  - name: 1\n  - name: 2\n")).toBe(true);
  });

  test("a repeated key is an error with its position, whichever path saw it first", () => {
    const p = fast(
      `instructions:\n  a:\n    name: A\n    payment_requirements: [{price: "$1", network: base, pay_to: "${PAY_TO}"}]\n  a:\n    name: B\n    payment_requirements: [{price: "$1", network: base, pay_to: "${PAY_TO}"}]\n`,
    );
    expect(p.errors).toEqual([expect.objectContaining({ rule: "yaml", line: 5, column: 3 })]);
    expect(p.instructions).toEqual([]);
  });
});
