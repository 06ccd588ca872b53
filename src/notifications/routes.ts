/**
 * /v3/x402/webhooks: the webhooks (list: read scope; create, change, delete,
 * test: write scope) and their delivery log (read), with a retry (write).
 * Webhooks declared in a pricing file are listed here too and changed only
 * by editing the file (409 otherwise), as with file-made instructions.
 */
import { Elysia } from "elysia";
import { type AuthDeps, auth } from "../http/auth";
import { jsonBody } from "../http/body";
import { conflict, invalidInput, notFound } from "../http/errors";
import { parseLimit } from "../http/paging";
import { ErrorResponse } from "../instructions/model";
import type { Dispatcher } from "./dispatcher";
import type { EventType } from "./events";
import {
  CreateWebhookBody,
  DELIVERIES_LIMIT,
  DeliveryListResponse,
  type DeliveryRecord,
  DeliveryResponse,
  IdParams,
  ListDeliveriesQuery,
  UpdateWebhookBody,
  WebhookCreatedResponse,
  WebhookListResponse,
  type WebhookRecord,
  WebhookResponse,
} from "./model";
import type { Delivery, NotificationStore, Webhook } from "./store";

export const WEBHOOKS_PREFIX = "/v3/x402/webhooks";

export function webhookToWire(w: Webhook): WebhookRecord {
  return {
    id: w.id,
    url: w.url,
    events: w.events,
    description: w.description,
    enabled: w.enabled,
    source: w.source,
    created_at: w.createdAt,
    updated_at: w.updatedAt,
  };
}

export function deliveryToWire(d: Delivery): DeliveryRecord {
  return {
    id: d.id,
    webhook_id: d.webhookId,
    event_id: d.eventId,
    event_type: d.eventType,
    state: d.state,
    attempts: d.attempts,
    next_attempt_at: d.state === "pending" ? d.nextAttemptAt : null,
    last_attempt_at: d.lastAttemptAt,
    last_status: d.lastStatus,
    last_error: d.lastError,
    delivered_at: d.deliveredAt,
    created_at: d.createdAt,
    payload: d.payload,
  };
}

const encodeToken = (id: number) => Buffer.from(`d1:${id}`).toString("base64url");
function decodeToken(token: string): number {
  const text = /^[A-Za-z0-9_-]{1,100}$/.test(token) ? Buffer.from(token, "base64url").toString("utf8") : "";
  const m = /^d1:([0-9]{1,15})$/.exec(text);
  if (!m) throw invalidInput([{ path: "pageToken", message: "is not a valid page token" }]);
  return Number(m[1]);
}

/** What the webhook routes need: the store, the dispatcher (test, retry), auth. */
export interface WebhooksDeps extends AuthDeps {
  notifications: NotificationStore;
  /** Absent when this app sends nothing (createApp without a server): test and retry only queue. */
  dispatcher?: Dispatcher;
}

/** The pattern lets "http://exa mple" through; the URL parser, as the dispatcher will use it, does not. */
function checkUrl(url: string | undefined) {
  if (url === undefined) return;
  let ok = false;
  try {
    ok = ["http:", "https:"].includes(new URL(url).protocol);
  } catch {}
  if (!ok) throw invalidInput([{ path: "url", message: "must be an http(s) URL" }]);
}

const read = <S>(ok: S) => ({ 200: ok, 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse });

export function webhooksModule(deps: WebhooksDeps) {
  const store = deps.notifications;
  const owned = async (id: string) => {
    const w = await store.getWebhook(id);
    if (!w) throw notFound(`no webhook ${id}`);
    if (w.source !== "api")
      throw conflict(`webhook ${id} is declared in a pricing file (${w.source}); edit the file to change it`);
    return w;
  };
  const deliveryId = async (text: string) => {
    const d = /^[0-9]{1,15}$/.test(text) ? await store.getDelivery(Number(text)) : undefined;
    if (!d) throw notFound(`no delivery ${text}`);
    return d;
  };

  return new Elysia({ name: "webhooks", prefix: WEBHOOKS_PREFIX })
    .use(jsonBody)
    .use(auth(deps))
    .get("", async () => ({ data: { webhooks: (await store.listWebhooks()).map(webhookToWire) } }), {
      scope: "read",
      response: read(WebhookListResponse),
      detail: {
        tags: ["webhooks"],
        summary: "List webhooks (from the API and from pricing files); secrets are not shown",
      },
    })
    .post(
      "",
      async ({ body, set }) => {
        checkUrl(body.url);
        const w = await store.createWebhook({ ...body, events: body.events as EventType[] | undefined });
        set.status = 201;
        return { data: { ...webhookToWire(w), secret: w.secret } };
      },
      {
        scope: "write",
        parse: "json",
        body: CreateWebhookBody,
        response: { ...read(WebhookCreatedResponse), 201: WebhookCreatedResponse },
        detail: { tags: ["webhooks"], summary: "Add a webhook; the answer shows its signing secret once" },
      },
    )
    .get(
      "/deliveries",
      async ({ query }) => {
        const page = await store.listDeliveries(
          { webhookId: query.webhook_id, state: query.state, eventType: query.event_type },
          {
            limit: parseLimit(query.limit, DELIVERIES_LIMIT),
            afterId: query.pageToken ? decodeToken(query.pageToken) : undefined,
          },
        );
        const data: { deliveries: DeliveryRecord[]; next_page_token?: string } = {
          deliveries: page.items.map(deliveryToWire),
        };
        if (page.nextAfterId !== undefined) data.next_page_token = encodeToken(page.nextAfterId);
        return { data };
      },
      {
        scope: "read",
        query: ListDeliveriesQuery,
        response: read(DeliveryListResponse),
        detail: { tags: ["webhooks"], summary: "The delivery log, newest first" },
      },
    )
    .post(
      "/deliveries/:id/retry",
      async ({ params }) => {
        const d = await deliveryId(params.id);
        if (d.state === "delivered") throw conflict(`delivery ${d.id} was delivered already`);
        const row = (await store.retry(d.id))!;
        return { data: deliveryToWire((await deps.dispatcher?.sendNow(row.id)) ?? row) };
      },
      {
        scope: "write",
        params: IdParams,
        response: { ...read(DeliveryResponse), 404: ErrorResponse, 409: ErrorResponse },
        detail: { tags: ["webhooks"], summary: "Send a pending or failed delivery again now" },
      },
    )
    .get(
      "/:id",
      async ({ params }) => {
        const w = await store.getWebhook(params.id);
        if (!w) throw notFound(`no webhook ${params.id}`);
        return { data: webhookToWire(w) };
      },
      {
        scope: "read",
        params: IdParams,
        response: { ...read(WebhookResponse), 404: ErrorResponse },
        detail: { tags: ["webhooks"], summary: "One webhook" },
      },
    )
    .patch(
      "/:id",
      async ({ params, body }) => {
        await owned(params.id);
        checkUrl(body.url);
        const w = (await store.updateWebhook(params.id, { ...body, events: body.events as EventType[] | undefined }))!;
        return { data: webhookToWire(w) };
      },
      {
        scope: "write",
        parse: "json",
        params: IdParams,
        body: UpdateWebhookBody,
        response: { ...read(WebhookResponse), 404: ErrorResponse, 409: ErrorResponse },
        detail: { tags: ["webhooks"], summary: "Change a webhook made through the API" },
      },
    )
    .delete(
      "/:id",
      async ({ params }) => {
        await owned(params.id);
        return { data: webhookToWire((await store.deleteWebhook(params.id))!) };
      },
      {
        scope: "write",
        params: IdParams,
        response: { ...read(WebhookResponse), 404: ErrorResponse, 409: ErrorResponse },
        detail: { tags: ["webhooks"], summary: "Delete a webhook made through the API (its log stays)" },
      },
    )
    .post(
      "/:id/test",
      async ({ params }) => {
        const w = await store.getWebhook(params.id);
        if (!w) throw notFound(`no webhook ${params.id}`);
        const queued = await store.queueTest(w);
        return { data: deliveryToWire((await deps.dispatcher?.sendNow(queued.id)) ?? queued) };
      },
      {
        scope: "write",
        params: IdParams,
        response: { ...read(DeliveryResponse), 404: ErrorResponse },
        detail: {
          tags: ["webhooks"],
          summary: "Send a webhook.test event now; the answer is its delivery (status, error), retried like any other",
        },
      },
    );
}
