/**
 * Settled payments as a sales report: totals per day (UTC) and network, per
 * network, and overall, summed exactly as BigInt units. Every priced asset is
 * USDC (instructions refuse any other), so units are dollars to six decimals.
 * No database here: `cidgate payments` reads the rows through the store.
 */
import type { Payment } from "./store";

export interface SalesTotal {
  sales: number;
  units: bigint;
}

export interface SalesReport {
  /** "2026-11-23|base-sepolia" order: newest day first, then network. */
  perDay: { day: string; network: string; sales: number; units: bigint }[];
  perNetwork: { network: string; sales: number; units: bigint }[];
  total: SalesTotal;
}

type Sale = Pick<Payment, "createdAt" | "network" | "amount">;

export function salesReport(rows: readonly Sale[]): SalesReport {
  const days = new Map<string, { day: string; network: string; sales: number; units: bigint }>();
  const networks = new Map<string, { network: string; sales: number; units: bigint }>();
  const total: SalesTotal = { sales: 0, units: 0n };
  for (const r of rows) {
    const units = BigInt(r.amount);
    const day = r.createdAt.slice(0, 10);
    const d = days.get(`${day}|${r.network}`) ?? { day, network: r.network, sales: 0, units: 0n };
    d.sales += 1;
    d.units += units;
    days.set(`${day}|${r.network}`, d);
    const n = networks.get(r.network) ?? { network: r.network, sales: 0, units: 0n };
    n.sales += 1;
    n.units += units;
    networks.set(r.network, n);
    total.sales += 1;
    total.units += units;
  }
  return {
    perDay: [...days.values()].sort((a, b) => b.day.localeCompare(a.day) || a.network.localeCompare(b.network)),
    perNetwork: [...networks.values()].sort((a, b) => a.network.localeCompare(b.network)),
    total,
  };
}
