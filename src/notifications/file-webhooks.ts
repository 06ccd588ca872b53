/**
 * What making the file-declared webhooks those of the pricing files takes:
 * the rows to create, update and delete, matched by `source` (so a webhook
 * keeps its id and its log across edits). Pure, for both engines' stores,
 * which write the plan in one transaction.
 */
import type { DesiredWebhook, Webhook } from "./store";

export interface FileWebhookPlan {
  create: DesiredWebhook[];
  update: { id: string; to: DesiredWebhook }[];
  remove: Webhook[];
}

/** `current`: the webhooks whose source is a file (`file:...`). */
export function planFileWebhooks(current: readonly Webhook[], desired: readonly DesiredWebhook[]): FileWebhookPlan {
  const bySource = new Map(current.map((w) => [w.source, w]));
  const plan: FileWebhookPlan = { create: [], update: [], remove: [] };
  for (const d of desired) {
    const had = bySource.get(d.source);
    bySource.delete(d.source);
    if (!had) plan.create.push(d);
    else if (
      had.url !== d.url ||
      had.secret !== d.secret ||
      had.enabled !== d.enabled ||
      had.description !== d.description ||
      JSON.stringify(had.events) !== JSON.stringify(d.events)
    )
      plan.update.push({ id: had.id, to: d });
  }
  plan.remove = [...bySource.values()];
  return plan;
}

/** What a plan changed, as syncFiles answers it. */
export const planCounts = (p: FileWebhookPlan) => ({
  created: p.create.length,
  updated: p.update.length,
  deleted: p.remove.length,
});

/** The fields of a webhook a file declares, as an update writes them. */
export const declared = (d: DesiredWebhook, now: string) => ({
  url: d.url,
  secret: d.secret,
  events: d.events,
  description: d.description,
  enabled: d.enabled,
  updatedAt: now,
});

/** Why pending deliveries of a removed webhook are failed. */
export const REMOVED_FROM_FILE = "webhook removed from its pricing file";
export const DELETED = "webhook deleted";
