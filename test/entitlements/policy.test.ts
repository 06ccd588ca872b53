import { describe, expect, test } from "bun:test";
import { expiryOf, isAccessScope, parseAccessPolicy } from "../../src/entitlements/policy";

describe("parseAccessPolicy", () => {
  test("forever, once, and whole numbers with a unit m, h, d or w", () => {
    expect(parseAccessPolicy("forever")).toEqual({ kind: "forever" });
    expect(parseAccessPolicy("once")).toEqual({ kind: "once" });
    expect(parseAccessPolicy("90m")).toEqual({ kind: "for", seconds: 90 * 60 });
    expect(parseAccessPolicy("12h")).toEqual({ kind: "for", seconds: 12 * 3600 });
    expect(parseAccessPolicy("30d")).toEqual({ kind: "for", seconds: 30 * 86_400 });
    expect(parseAccessPolicy("2w")).toEqual({ kind: "for", seconds: 14 * 86_400 });
  });

  test("refuses a bare number, zero, fractions, other units, other case and spaces", () => {
    for (const bad of [
      "30",
      "0d",
      "0m",
      "1.5d",
      "-1d",
      "30s",
      "1y",
      "30D",
      "Forever",
      " 30d",
      "30d ",
      "",
      "d",
      "1234567d",
    ])
      expect(parseAccessPolicy(bad)).toBeUndefined();
  });

  test("expiry: never for forever, none granted for once, now + duration otherwise", () => {
    expect(expiryOf({ kind: "forever" }, 1000)).toBeNull();
    expect(expiryOf({ kind: "once" }, 1000)).toBeUndefined();
    expect(expiryOf({ kind: "for", seconds: 60 }, 1000)).toBe(1060);
  });

  test("scopes are cid and instruction", () => {
    expect(isAccessScope("cid")).toBe(true);
    expect(isAccessScope("instruction")).toBe(true);
    expect(isAccessScope("CID")).toBe(false);
  });
});
