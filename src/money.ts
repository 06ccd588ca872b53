/**
 * USDC's smallest unit as dollars, for people: "10000" -> "$0.01",
 * "1234567" -> "$1.234567". Exact (BigInt, never a float), at least two
 * decimals, no trailing zeros past them. The ledger and the API keep the
 * units; only what is shown to a person is in dollars.
 */
import { USDC_DECIMALS } from "./pricing/price";

export function usd(units: string | bigint): string {
  const n = BigInt(units);
  const sign = n < 0n ? "-" : "";
  const abs = n < 0n ? -n : n;
  const scale = 10n ** BigInt(USDC_DECIMALS);
  const whole = (abs / scale).toLocaleString("en-US");
  const fraction = (abs % scale).toString().padStart(USDC_DECIMALS, "0").replace(/0+$/, "").padEnd(2, "0");
  return `${sign}$${whole}.${fraction}`;
}
