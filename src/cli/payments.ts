/**
 * `cidgate payments [list]`: recent sales in dollars, then totals per day and
 * per network, read from the ledger at CIDGATE_DB, SQLite or PostgreSQL (settled payments only:
 * pending and failed rows are not revenue). `--csv` prints every sale in the
 * window as CSV for a spreadsheet or an accountant. A group, so that more
 * ledger commands sit beside `list`: `resolve` (payments-resolve.ts).
 */
import { grid } from "../grid";
import { salesReport } from "../ledger/sales";
import type { Payment } from "../ledger/store";
import { usd } from "../money";
import { defineCommand, defineGroup, UsageError } from "./command";
import { resolve } from "./payments-resolve";
import { withStores } from "./with-stores";

function whole(raw: string | undefined, name: string, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max)
    throw new UsageError(`--${name}: a whole number from 1 to ${max} (got "${raw}")`);
  return Number(raw);
}

/** A CSV field: quoted when it holds a comma, quote or line break. */
const csvField = (v: string) => (/[",\n\r]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v);

const short = (text: string, keep = 10) =>
  text.length > keep * 2 + 1 ? `${text.slice(0, keep)}…${text.slice(-6)}` : text;

const list = defineCommand({
  name: "payments list",
  summary: "recent sales in dollars, with totals per day and per network",
  options: {
    days: { type: "string", value: "<n>", description: "the window: sales of the last n days (default 30)" },
    limit: {
      type: "string",
      value: "<n>",
      description: "how many recent sales to list (default 20; totals cover the window)",
    },
    csv: { type: "boolean", description: "every sale in the window as CSV on stdout, no totals" },
  },
  notes: "Only settled payments count. Amounts are USDC, shown in dollars. The database is CIDGATE_DB.",
  async run({ values, who }) {
    const days = whole(values.days, "days", 30, 36500);
    const limit = whole(values.limit, "limit", 20, 100000);
    return withStores(who, async ({ payments: store }) => {
      const since = new Date(Date.now() - days * 86_400_000).toISOString();
      const sales: Payment[] = [];
      let afterId: number | undefined;
      do {
        const page = await store.list({ state: "settled", createdFrom: since }, { limit: 1000, afterId });
        sales.push(...page.items);
        afterId = page.nextAfterId;
      } while (afterId !== undefined);

      if (values.csv) {
        console.log("id,time,network,payer,cid,instruction_id,amount_usd,amount_units,tx");
        for (const p of sales)
          console.log(
            [
              String(p.id),
              p.createdAt,
              p.network,
              p.payer,
              p.cid,
              p.instructionId,
              usd(p.amount),
              p.amount,
              p.txHash ?? "",
            ]
              .map(csvField)
              .join(","),
          );
        return 0;
      }
      if (sales.length === 0) {
        console.log(`no sales in the last ${days} day(s)`);
        return 0;
      }
      const report = salesReport(sales);
      const shown = sales.slice(0, limit);
      console.log(`recent sales (${shown.length} of ${sales.length} in the last ${days} day(s)):`);
      console.log(
        grid([
          ["time", "network", "payer", "CID", "amount", "tx"],
          ...shown.map((p) => [
            p.createdAt.slice(0, 19).replace("T", " "),
            p.network,
            short(p.payer),
            short(p.cid),
            usd(p.amount),
            short(p.txHash ?? ""),
          ]),
        ]),
      );
      console.log("\nper day (UTC):");
      console.log(
        grid([
          ["day", "network", "sales", "revenue"],
          ...report.perDay.map((d) => [d.day, d.network, String(d.sales), usd(d.units)]),
        ]),
      );
      console.log("\nper network:");
      console.log(
        grid([
          ["network", "sales", "revenue"],
          ...report.perNetwork.map((n) => [n.network, String(n.sales), usd(n.units)]),
        ]),
      );
      console.log(`\ntotal: ${report.total.sales} sale(s), ${usd(report.total.units)}`);
      return 0;
    });
  },
});

export const command = defineGroup(
  "payments",
  "the ledger: sales in dollars; resolve a pending payment",
  [list, resolve],
  "list",
);
