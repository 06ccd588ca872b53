/**
 * "$0.05" -> "50000": a US-dollar price as an exact amount of USDC's smallest
 * unit (6 decimals). Decimal text is split, never parsed as a float, so no
 * price is ever rounded: anything finer than $0.000001, zero or negative is
 * refused with the reason.
 */
export const USDC_DECIMALS = 6;

export type PriceResult = { amount: string } | { error: string };

export function priceToAmount(price: string): PriceResult {
  const text = price.trim();
  if (/^-|^\$\s*-/.test(text)) return { error: "a price must be more than $0, not negative" };
  const m = /^\$(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m) return { error: `write a price as dollars and cents with a leading "$", e.g. "$0.05" (got "${price}")` };
  const [, whole, fraction = ""] = m;
  if (fraction.length > USDC_DECIMALS) {
    return { error: `"${price}" is finer than six decimals; USDC's smallest unit is $0.000001` };
  }
  const amount = BigInt(whole) * 10n ** BigInt(USDC_DECIMALS) + BigInt(fraction.padEnd(USDC_DECIMALS, "0") || "0");
  if (amount === 0n) return { error: "a price must be more than $0" };
  return { amount: amount.toString() };
}
