/**
 * What the dashboard shows beside the statistics (GET /v3/x402/stats, i.e.
 * src/stats/): the recent payments with file names and dollars, and what
 * needs attention. No HTTP types here; routes.ts adapts. Everything is read
 * through the owning stores.
 */
import { NETWORKS, type NetworkName, usdcAddress } from "../chain/networks";
import type { ContentStore } from "../content/store";
import type { EntitlementStore } from "../entitlements/store";
import type { InstructionStore } from "../instructions/store";
import { isUnconfirmed, type Payment, type PaymentStore, UNCONFIRMED } from "../ledger/store";
import type { NotificationStore } from "../notifications/store";
import type { Pricing } from "../pricing/service";
import type { Settings } from "../settings";

/** The explorer of each network a transaction is linked to. */
export const EXPLORERS: Record<NetworkName, string> = {
  base: "https://basescan.org/tx/",
  "base-sepolia": "https://sepolia.basescan.org/tx/",
};

/** An amount of a 6-decimal token in dollars, exact ("0.01", "12.5", "0.000001"). */
export function usdOf(amount: string): string {
  const n = BigInt(amount);
  const whole = n / 1_000_000n;
  const frac = (n % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : `${whole}`;
}

/** What a row in the ledger means for the creator, in one word. */
export type PaymentStatus = "settled" | "settling" | "unconfirmed" | "money_moved" | "failed";

/**
 * "Money moved without a sale": the settlement is on chain but the ledger
 * could not record it (ledger/settler.ts keeps the row unconfirmed with
 * this detail and queues `payment.money_moved_without_sale`).
 */
const MONEY_MOVED = `${UNCONFIRMED}: recording:`;

export function statusOf(p: Payment, staleBefore: string): PaymentStatus {
  if (p.state === "settled") return "settled";
  if (p.state === "failed") return "failed";
  if (p.error?.startsWith(MONEY_MOVED)) return "money_moved";
  return isUnconfirmed(p, staleBefore) ? "unconfirmed" : "settling";
}

export interface OverviewDeps {
  payments: Pick<PaymentStore, "list">;
  content: Pick<ContentStore, "list">;
  instructions: Pick<InstructionStore, "get">;
  notifications: Pick<NotificationStore, "counts" | "listWebhooks">;
  /** The newest active entitlements, whose files and instructions the page names. */
  entitlements: Pick<EntitlementStore, "list">;
  pricing?: Pick<Pricing, "status">;
  settings: Pick<Settings, "usdcAddressBase" | "usdcAddressBaseSepolia" | "configDir" | "facilitatorTimeoutMs">;
}

export function createOverview(deps: OverviewDeps) {
  const usdc = (network: string) =>
    network in NETWORKS ? usdcAddress(network as NetworkName, deps.settings).toLowerCase() : undefined;

  function wire(p: Payment, paths: Map<string, string>, staleBefore: string) {
    const explorer = EXPLORERS[p.network as NetworkName];
    return {
      id: p.id,
      created_at: p.createdAt,
      updated_at: p.updatedAt,
      payer: p.payer,
      cid: p.cid,
      path: paths.get(p.cid) ?? null,
      payment_instruction_id: p.instructionId,
      network: p.network,
      amount: p.amount,
      usd: usdc(p.network) === p.asset.toLowerCase() ? usdOf(p.amount) : null,
      state: p.state,
      status: statusOf(p, staleBefore),
      transaction: p.txHash,
      explorer_url: p.txHash && explorer ? explorer + p.txHash : null,
      detail: p.state === "settled" ? null : p.error,
    };
  }

  return {
    /** Recent payments and everything that needs the creator's attention, in one read. */
    async read(now = Date.now()) {
      const paths = new Map<string, string>();
      for (const f of deps.content.list()) if (!paths.has(f.cid)) paths.set(f.cid, f.path);
      // The settler's own bound: a pending row older than this is from a process that stopped.
      const staleBefore = new Date(now - 3 * deps.settings.facilitatorTimeoutMs - 5000).toISOString();
      const recent = (await deps.payments.list({}, { limit: 20 })).items.map((p) => wire(p, paths, staleBefore));
      const pending = (await deps.payments.list({ state: "pending" }, { limit: 100 })).items.map((p) =>
        wire(p, paths, staleBefore),
      );
      // Names for what the page shows (payments, the entitlements table), not the whole content folder.
      const nowSeconds = Math.floor(now / 1000);
      const granted = (await deps.entitlements.list({ active: true, now: nowSeconds }, { limit: 50 })).items;
      const shown = [...recent, ...pending];
      const cids = new Set([...shown.map((p) => p.cid), ...granted.flatMap((e) => (e.cid ? [e.cid] : []))]);
      const instructionIds = new Set([
        ...shown.map((p) => p.payment_instruction_id),
        ...granted.map((e) => e.instructionId),
      ]);
      const reload = deps.pricing?.status().lastReload;
      const dir = deps.settings.configDir;
      const webhooks = await deps.notifications.counts();
      const configured = (await deps.notifications.listWebhooks()).length;
      const names = await Promise.all(
        [...instructionIds].map(async (id) => {
          try {
            return [id, (await deps.instructions.get(id)).name] as const;
          } catch {
            return [id, null] as const; // deleted since
          }
        }),
      );
      return {
        recent_payments: recent,
        attention: {
          /** Settling right now is normal; unconfirmed and money-moved rows need a look. */
          pending: pending.filter((p) => p.status !== "money_moved"),
          money_moved_without_sale: pending.filter((p) => p.status === "money_moved"),
          pricing:
            reload?.result === "rejected"
              ? {
                  at: reload.at,
                  errors: reload.errors.map((e) => ({
                    file: e.file.startsWith(`${dir}/`) ? e.file.slice(dir.length + 1) : e.file,
                    line: e.line,
                    column: e.column,
                    rule: e.rule,
                    message: e.message,
                  })),
                }
              : null,
          webhooks: { ...webhooks, configured },
        },
        instruction_names: Object.fromEntries(names),
        paths: Object.fromEntries([...cids].flatMap((c) => (paths.has(c) ? [[c, paths.get(c)]] : []))),
      };
    },
  };
}

export type Overview = ReturnType<typeof createOverview>;
