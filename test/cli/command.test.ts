/**
 * defineCommand in-process: what every command gets without writing it.
 * (test/cli/main.test.ts runs the real `cidgate` for the same behaviours end to end.)
 */
import { describe, expect, test } from "bun:test";
import { defineCommand, UsageError } from "../../src/cli/command";

/** Runs `main(args)` capturing stdout and stderr lines. */
async function run(command: ReturnType<typeof defineCommand>, args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const [log, error] = [console.log, console.error];
  console.log = (...a: unknown[]) => void out.push(a.join(" "));
  console.error = (...a: unknown[]) => void err.push(a.join(" "));
  try {
    const code = await command.main(args);
    return { code, out: out.join("\n"), err };
  } finally {
    [console.log, console.error] = [log, error];
  }
}

let seen: unknown;
const example = defineCommand({
  name: "thing make",
  summary: "makes a thing",
  arguments: [
    { name: "source", description: "what to make it from" },
    { name: "target", description: "where to put it", optional: true },
  ],
  options: {
    size: { type: "string", value: "<n>", description: "how big" },
    force: { type: "boolean", description: "even if it exists" },
  },
  notes: "Reads THING_DIR.",
  async run(input) {
    seen = input;
    if (input.values.size === "huge") throw new UsageError(`--size: too big (got "huge")`);
    return 0;
  },
});

describe("defineCommand", () => {
  test("run() gets typed values, the arguments and its name for messages", async () => {
    expect((await run(example, ["make", "a", "--size=3", "--force"])).code).toBe(0);
    expect(seen).toEqual({ values: { size: "3", force: true }, positionals: ["a"], who: "cidgate thing make" });
  });

  test("--help, -h and `help` print the help on stdout and exit 0, without running", async () => {
    seen = undefined;
    for (const args of [["make", "--help"], ["make", "a", "-h"], ["--help"], ["help"], ["make", "--bogus", "--help"]]) {
      const r = await run(example, args);
      expect(r.code).toBe(0);
      expect(r.err).toEqual([]);
      expect(r.out).toContain("cidgate thing make: makes a thing");
      expect(r.out).toContain("usage: cidgate thing make <source> [target] [options]");
      expect(r.out).toMatch(/--size <n>\s+how big/);
      expect(r.out).toMatch(/--force\s+even if it exists/);
      expect(r.out).toMatch(/target\s+where to put it/);
      expect(r.out).toContain("Reads THING_DIR.");
    }
    expect(seen).toBeUndefined();
  });

  test("every usage error is one line on stderr naming what is wrong, exit 2, nothing run", async () => {
    seen = undefined;
    const cases: [string[], string][] = [
      [["make", "a", "--colour", "red"], "cidgate thing make: unknown option --colour"],
      [["make", "a", "--force=yes"], "cidgate thing make: unknown option --force=yes"],
      [["make", "a", "-x"], "cidgate thing make: unknown option -x"],
      [["make", "a", "--size", "1", "--size", "2"], "cidgate thing make: --size given twice; give it once"],
      [["make", "a", "--size"], "cidgate thing make: --size needs a value"],
      [["make", "a", "--size="], "cidgate thing make: --size needs a value"],
      [["make"], "cidgate thing make: missing <source>"],
      [["make", "a", "b", "c"], "cidgate thing make: unexpected argument c"],
      [[], "cidgate thing: missing subcommand: make"],
      [["break"], "cidgate thing: unknown subcommand break; the only one is make"],
    ];
    for (const [args, message] of cases) {
      const r = await run(example, args);
      expect(r.code).toBe(2);
      expect(r.out).toBe("");
      expect(r.err).toHaveLength(1);
      expect(r.err[0]).toStartWith(message);
      expect(r.err[0]).toContain("--help");
    }
    expect(seen).toBeUndefined();
  });

  test("a UsageError thrown by run() is the same one line, exit 2", async () => {
    const r = await run(example, ["make", "a", "--size", "huge"]);
    expect(r.code).toBe(2);
    expect(r.err).toEqual(['cidgate thing make: --size: too big (got "huge") (see cidgate thing make --help)']);
  });

  test("other errors are not swallowed", async () => {
    const broken = defineCommand({
      name: "broken",
      summary: "throws",
      run: async () => {
        throw new Error("bug");
      },
    });
    await expect(broken.main([])).rejects.toThrow("bug");
  });
});
