import { expect, test } from "bun:test";
import { parseRange } from "../../src/gateway/range";

test("single byte ranges of a paid file", () => {
  expect(parseRange(null, 10)).toBeUndefined();
  expect(parseRange("bytes=2-", 10)).toEqual({ start: 2, end: 9 });
  expect(parseRange("bytes=2-100", 10)).toEqual({ start: 2, end: 9 });
  expect(parseRange("bytes=-3", 10)).toEqual({ start: 7, end: 9 });
  expect(parseRange("bytes=-30", 10)).toEqual({ start: 0, end: 9 });
  expect(parseRange("bytes=10-", 10)).toBe("unsatisfiable");
  expect(parseRange("bytes=-0", 10)).toBe("unsatisfiable");
  // Several ranges are answered whole.
  expect(parseRange("bytes=0-1,3-4", 10)).toBeUndefined();
});

test("no range of an empty file is satisfiable (never `bytes 0--1/0`)", () => {
  expect(parseRange("bytes=-5", 0)).toBe("unsatisfiable");
  expect(parseRange("bytes=0-", 0)).toBe("unsatisfiable");
});
