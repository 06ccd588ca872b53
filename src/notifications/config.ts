/**
 * The `notifications:` section of a pricing file: webhooks declared next to
 * the prices, reconciled into the webhooks table on every good reload (by
 * key, so a webhook keeps its id and delivery log across edits).
 *
 *   notifications:
 *     webhooks:
 *       sales-bot:
 *         url: https://hooks.example.com/cidgate
 *         secret: ${CIDGATE_WEBHOOK_SECRET}
 *         events: [payment.settled, payment.money_moved_without_sale]
 *
 * Checked here with the loader's positions (file:line:column) and rules;
 * a mistake rejects the whole reload, like any pricing error.
 */
import { Type as t } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { EVENT_TYPES, type EventType } from "./events";
import { MAX_URL, MIN_SECRET } from "./model";
import type { DesiredWebhook } from "./store";

const KEY = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$";

export const WebhookModel = t.Object(
  {
    url: t.String({ maxLength: MAX_URL, description: "Where events are POSTed (http or https)." }),
    secret: t.String({
      description: `HMAC-SHA256 key of the Cidgate-Signature header, ${MIN_SECRET}+ characters; write \${VAR} to keep it out of the file.`,
    }),
    events: t.Optional(
      t.Array(t.Union(EVENT_TYPES.map((e) => t.Literal(e))), { description: "Event types to send; omitted: all." }),
    ),
    description: t.Optional(t.String({ maxLength: 500 })),
    enabled: t.Optional(t.Boolean({ description: "false: declared but sends nothing (default true)." })),
  },
  { additionalProperties: false },
);

export const NotificationsModel = t.Object(
  {
    webhooks: t.Optional(
      t.Record(t.String({ pattern: KEY }), WebhookModel, {
        additionalProperties: false,
        description: "Webhooks by stable key: the key keeps a webhook's id and delivery log across edits.",
      }),
    ),
  },
  { additionalProperties: false, description: "Webhooks for sales, grants, revokes and reload failures." },
);

export const checkNotifications = TypeCompiler.Compile(NotificationsModel);

type Problem = (path: (string | number)[], rule: string, message: string) => void;

/** The rules a schema does not say well; the section has passed `checkNotifications`. */
export function desiredWebhooks(
  section: {
    webhooks?: Record<
      string,
      { url: string; secret: string; events?: string[]; description?: string; enabled?: boolean }
    >;
  },
  file: string,
  problem: Problem,
): DesiredWebhook[] {
  const out: DesiredWebhook[] = [];
  for (const [key, w] of Object.entries(section.webhooks ?? {})) {
    const base = ["notifications", "webhooks", key];
    let ok = true;
    let url: URL | undefined;
    try {
      url = new URL(w.url);
    } catch {}
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
      problem([...base, "url"], "url", `${base.join(".")}.url: must be an http(s) URL`);
      ok = false;
    }
    if (w.secret.length < MIN_SECRET) {
      problem([...base, "secret"], "secret", `${base.join(".")}.secret: must be at least ${MIN_SECRET} characters`);
      ok = false;
    }
    if (!ok) continue;
    out.push({
      source: `file:${file}#${key}`,
      url: w.url,
      secret: w.secret,
      events: [...new Set(w.events ?? [])] as EventType[],
      description: w.description ?? null,
      enabled: w.enabled ?? true,
    });
  }
  return out;
}
