/**
 * The calls other modules make into notifications, each a one-liner at the
 * place a change is written (in its transaction): the ledger's settled
 * payment and money that moved without a sale, the entitlements store's
 * grants and revokes, and the pricing reloader's rejections.
 */
import type { Pricing, ReloadReport } from "../pricing/service";
import { type EntitlementFacts, entitlementData, type PaymentFacts, paymentData } from "./events";
import type { Notify } from "./store";

/** What the ledger reports (ledger/outcome.ts, ledger/settler.ts). */
export interface LedgerEvents {
  /** A pending row became settled (once per payment: called in the transaction that marks it). */
  settled(payment: PaymentFacts): void | Promise<void>;
  /** The money moved on chain and no sale was recorded: an operator must look (see docs/notifications.md). */
  moneyMovedWithoutSale(payment: PaymentFacts, transaction: string | null, reason: string): void | Promise<void>;
}

export const ledgerEvents = (notify: Notify): LedgerEvents => ({
  settled: (p) => notify.emit("payment.settled", paymentData(p)),
  moneyMovedWithoutSale: (p, transaction, reason) =>
    notify.emit("payment.money_moved_without_sale", { ...paymentData(p), transaction, reason }),
});

/** What the entitlements store reports. */
export interface EntitlementEvents {
  granted(e: EntitlementFacts): void | Promise<void>;
  revoked(e: EntitlementFacts): void | Promise<void>;
}

export const entitlementEvents = (notify: Notify): EntitlementEvents => ({
  granted: (e) => notify.emit("entitlement.granted", entitlementData(e)),
  revoked: (e) => notify.emit("entitlement.revoked", entitlementData(e)),
});

/** The problems of a rejected reload, as a receiver reads them (file:line:col, relative to the config folder). */
const problems = (r: ReloadReport, configDir: string) =>
  r.errors.map((e) => ({
    file: e.file.startsWith(`${configDir}/`) ? e.file.slice(configDir.length + 1) : e.file,
    line: e.line,
    column: e.column,
    rule: e.rule,
    message: e.message,
  }));

/**
 * The pricing reloader, with `config.reload_failed` sent for a rejected
 * reload. The same errors again (an editor saving the same mistake, the
 * watcher reloading for a content change) are sent once; a good reload in
 * between starts over.
 */
export function reportReloadFailures(pricing: Pricing, notify: Notify, configDir: string): Pricing {
  let said: string | undefined;
  const check = (r: ReloadReport | undefined) => {
    if (!r) return;
    if (r.result !== "rejected") {
      said = undefined;
      return;
    }
    const errors = problems(r, configDir);
    const key = JSON.stringify(errors);
    if (key === said) return;
    said = key;
    notify.emit("config.reload_failed", { at: r.at, trigger: r.trigger, errors });
  };
  check(pricing.status().lastReload); // the start-up reload, done before this wrapper existed
  return {
    async reload(trigger) {
      const report = await pricing.reload(trigger);
      check(report);
      return report;
    },
    status: () => pricing.status(),
    presentation: () => pricing.presentation(),
    settling: () => pricing.settling(),
  };
}
