/** A webhook made or edited through the API, as a row: the same values on either engine. */
import { randomBytes } from "node:crypto";
import type { WebhookInput } from "./store";

/** A fresh signing secret for a webhook made through the API (shown once, in the create answer). */
export const newSecret = () => `whsec_${randomBytes(24).toString("base64url")}`;

/** A new API webhook's row (id and, when none is given, secret made here). */
export function newWebhookRow(input: WebhookInput, now: string) {
  return {
    id: `wh_${Bun.randomUUIDv7()}`,
    url: input.url,
    secret: input.secret ?? newSecret(),
    events: input.events ?? [],
    description: input.description ?? null,
    enabled: input.enabled ?? true,
    source: "api",
    createdAt: now,
    updatedAt: now,
  };
}

/** The columns an edit sets: those given, and the update time. */
export function webhookChanges(input: Partial<WebhookInput>, now: string) {
  return {
    ...(input.url !== undefined && { url: input.url }),
    ...(input.secret !== undefined && { secret: input.secret }),
    ...(input.events !== undefined && { events: input.events }),
    ...(input.description !== undefined && { description: input.description }),
    ...(input.enabled !== undefined && { enabled: input.enabled }),
    updatedAt: now,
  };
}

/** Whether webhook `w` wants events of `type` (no events listed: every event). */
export const wants = (w: { events: readonly string[] }, type: string) =>
  w.events.length === 0 || w.events.includes(type);
