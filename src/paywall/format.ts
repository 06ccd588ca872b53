/** Small formatting helpers shared by the server-rendered pages (and safe to bundle into the page script). */

/** Text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A token amount in its smallest unit as a decimal string: 10000 with 6 decimals -> "0.01". */
export function formatUnits(amount: bigint, decimals: number): string {
  const negative = amount < 0n;
  const digits = (negative ? -amount : amount).toString().padStart(decimals + 1, "0");
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}

/** Dollars with at least cents: "0.01" -> "$0.01", "1" -> "$1.00", "0.000001" -> "$0.000001". */
export function formatDollars(usdc: string): string {
  const [whole, fraction = ""] = usdc.split(".");
  return `$${whole}.${fraction.padEnd(2, "0")}`;
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 100 ? 1 : 0)} ${units[unit]}`;
}
