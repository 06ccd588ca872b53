/** Dollars for people (src/money.ts): exact, never a float. */
import { expect, test } from "bun:test";
import { usd } from "../src/money";

test("USDC units as dollars: two decimals at least, no rounding, no float", () => {
  expect(usd("10000")).toBe("$0.01");
  expect(usd("1")).toBe("$0.000001");
  expect(usd("50500")).toBe("$0.0505");
  expect(usd("0")).toBe("$0.00");
  expect(usd(1_234_567_890n)).toBe("$1,234.56789");
  // Past 2^53 units, a float would round; BigInt keeps every digit.
  expect(usd("9007199254740993")).toBe("$9,007,199,254.740993");
  expect(usd(-10000n)).toBe("-$0.01");
});
