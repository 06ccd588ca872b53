import { describe, expect, test } from "bun:test";
import { substitute } from "../../src/pricing/env";

describe("${VAR} substitution", () => {
  const run = (value: string, env: Record<string, string | undefined>) => {
    const problems: string[] = [];
    return { out: substitute(value, env, (m) => problems.push(m)), problems };
  };

  test("replaces a set variable and keeps $${X} literal", () => {
    expect(run("${PAY_TO}/$${PAY_TO}", { PAY_TO: "0xabc" })).toEqual({ out: "0xabc/${PAY_TO}", problems: [] });
  });

  test("a missing or empty variable is an error naming it", () => {
    expect(run("${NOPE}", {}).problems).toEqual(["environment variable NOPE is not set"]);
    expect(run("${EMPTY}", { EMPTY: "" }).problems).toEqual(["environment variable EMPTY is not set"]);
  });

  test("a name that is not a variable name (`${1X}`, `${}`, `${A-B}`) is refused as such, even when the environment has it", () => {
    for (const name of ["1X", "", "A-B", " X"]) {
      expect(run(`\${${name}}`, { [name]: "0xabc" })).toEqual({
        out: `\${${name}}`,
        problems: [`"\${${name}}" is not a valid variable reference`],
      });
    }
  });

  test("names of Object.prototype members are not variables of the environment", () => {
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      expect(run(`\${${name}}`, {}).problems).toEqual([`environment variable ${name} is not set`]);
    }
  });
});
