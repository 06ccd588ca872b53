/**
 * What start-up does before it listens (and `cidgate doctor` does on demand):
 * open the shop as the server will serve it, ask the facilitator, the RPC and
 * the disk, and decide (src/doctor/checks.ts). A failure refuses start-up:
 * a shop that cannot settle what it prices, or names a URL nobody can reach,
 * would take buyers' signatures and answer them 500.
 */

import { networksOf } from "../catalog/listing";
import { openShop } from "../catalog/open";
import { type CheckResult, decide, type ShopFacts } from "../doctor/checks";
import { gatherFacts, type ProbeOptions } from "../doctor/probe";
import { createFacilitator } from "../facilitator/create";
import { formatProblem } from "../pricing/load";
import type { ReloadReport } from "../pricing/service";
import { type Settings, selectsPostgres } from "../settings";

export interface Preflight {
  facts: ShopFacts;
  results: CheckResult[];
  pricing: ReloadReport;
  /** The pricing problems, one line each, as `config check` prints them. */
  pricingErrors: string[];
}

/**
 * The settings openShop (catalog/open.ts, SQLite) is given. With PostgreSQL this replica's SQLite
 * file is its content index (CONTENT_INDEX_DB): the shop is opened over it for the content and the
 * pricing files' check, and the shared database is asked by the probe (connects, migrated) without
 * being migrated here. API-priced CIDs live in PostgreSQL and are not among `priced` then: the
 * facilitator check sees the pricing files' networks.
 */
export function localShopSettings(settings: Settings): Settings {
  return selectsPostgres(settings.db) ? { ...settings, db: settings.contentIndexDb } : settings;
}

export async function preflight(
  settings: Settings,
  env: Record<string, string | undefined> = process.env,
  integrity: ProbeOptions["integrity"] = "quick_check",
): Promise<Preflight> {
  const shop = await openShop(localShopSettings(settings), env);
  const facilitator = createFacilitator(settings);
  try {
    const pricedNetworks = networksOf(shop.priced);
    const facts = await gatherFacts({ settings, env, db: shop.db, pricedNetworks, facilitator, integrity });
    return {
      facts,
      results: decide(facts),
      pricing: shop.pricing,
      pricingErrors: shop.pricing.errors.map(formatProblem),
    };
  } finally {
    (facilitator as { close?: () => void }).close?.();
    shop.close();
  }
}
