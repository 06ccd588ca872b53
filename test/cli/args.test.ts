import { describe, expect, test } from "bun:test";
import { parseOptions } from "../../src/cli/args";

const spec = { scope: "string", force: "boolean" } as const;

describe("parseOptions (the CLI's shared option parsing)", () => {
  test("--name value, --name=value, flags and positionals", () => {
    expect(parseOptions(["create", "--scope", "read", "x", "--force"], spec)).toEqual({
      values: { scope: "read", force: true },
      positionals: ["create", "x"],
      unknown: undefined,
    });
    expect(parseOptions(["--scope=read,write"], spec).values.scope).toBe("read,write");
  });

  test("a string option takes the next argument as typed; a missing value reads as empty", () => {
    expect(parseOptions(["--scope", "--force"], spec).values).toEqual({ scope: "--force" });
    expect(parseOptions(["--scope"], spec).values).toEqual({ scope: "" });
    expect(parseOptions(["--scope="], spec).values).toEqual({ scope: "" });
  });

  test("the first undeclared option, or a flag given a value, is reported as typed", () => {
    expect(parseOptions(["--sope=read", "--other"], spec).unknown).toBe("--sope=read");
    expect(parseOptions(["--force=yes"], spec).unknown).toBe("--force=yes");
    expect(parseOptions(["-x"], spec).unknown).toBe("-x");
    expect(parseOptions(["--", "--sope"], spec)).toEqual({ values: {}, positionals: ["--sope"], unknown: undefined });
  });
});

describe("parseOptions: repeats", () => {
  test("an option given twice is reported, and the first value kept, never silently the last", () => {
    expect(parseOptions(["--scope", "read", "--scope=write"], spec)).toMatchObject({
      values: { scope: "read" },
      repeated: "--scope",
    });
    expect(parseOptions(["--force", "--force"], spec).repeated).toBe("--force");
    expect(parseOptions(["--scope", "read"], spec).repeated).toBeUndefined();
  });

  test("names of Object.prototype are unknown options, not declared ones", () => {
    expect(parseOptions(["--constructor"], spec).unknown).toBe("--constructor");
    expect(parseOptions(["--toString=x"], spec).unknown).toBe("--toString=x");
  });
});
