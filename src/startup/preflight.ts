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
import type { Settings } from "../settings";

export interface Preflight {
  facts: ShopFacts;
  results: CheckResult[];
  pricing: ReloadReport;
  /** The pricing problems, one line each, as `config check` prints them. */
  pricingErrors: string[];
}

export async function preflight(
  settings: Settings,
  env: Record<string, string | undefined> = process.env,
  integrity: ProbeOptions["integrity"] = "quick_check",
): Promise<Preflight> {
  const shop = await openShop(settings, env);
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
