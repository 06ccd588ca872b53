/**
 * Wire shapes of /v3/x402/webhooks, declared once (TypeBox): Elysia validates
 * requests with them, OpenAPI documents them, types derive. Names and paging
 * follow the other management lists (snake_case, `limit`, `pageToken`).
 */
import { type Static, Type as T } from "@sinclair/typebox";
import { Limit, NextPageToken, PageToken } from "../http/paging";
import { EVENT_TYPES, TEST_EVENT } from "./events";

export const DELIVERIES_LIMIT = { max: 1000, fallback: 50 } as const;
export const MIN_SECRET = 16;
export const MAX_URL = 2000;

const EventName = T.Union(
  EVENT_TYPES.map((e) => T.Literal(e)),
  { error: `must be one of ${EVENT_TYPES.join(", ")}` },
);

const Url = T.String({
  maxLength: MAX_URL,
  pattern: "^https?://",
  description: "where events are POSTed (http or https)",
  error: "must be an http(s) URL",
});
const Secret = T.String({
  minLength: MIN_SECRET,
  maxLength: 200,
  description: "HMAC-SHA256 key of the Cidgate-Signature header; omitted on create: one is generated",
  error: `must be ${MIN_SECRET} to 200 characters`,
});
const Events = T.Array(EventName, { maxItems: EVENT_TYPES.length, description: "event types; empty: all" });
const Description = T.Union([T.String({ maxLength: 500 }), T.Null()]);

export const CreateWebhookBody = T.Object(
  {
    url: Url,
    secret: T.Optional(Secret),
    events: T.Optional(Events),
    description: T.Optional(Description),
    enabled: T.Optional(T.Boolean()),
  },
  { additionalProperties: false, error: "must be a JSON object with url" },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const UpdateWebhookBody = T.Object(
  {
    url: T.Optional(Url),
    secret: T.Optional(Secret),
    events: T.Optional(Events),
    description: T.Optional(Description),
    enabled: T.Optional(T.Boolean()),
  },
  { additionalProperties: false, error: "must be a JSON object" },
);

export const WebhookRecord = T.Object({
  id: T.String(),
  url: T.String(),
  events: T.Array(T.String(), { description: "empty: every event" }),
  description: T.Union([T.String(), T.Null()]),
  enabled: T.Boolean(),
  source: T.String({ description: '"api", or "file:<pricing file>#<key>" (edit the file to change it)' }),
  created_at: T.String(),
  updated_at: T.String(),
});
export type WebhookRecord = Static<typeof WebhookRecord>;

export const WebhookWithSecret = T.Composite([
  WebhookRecord,
  T.Object({ secret: T.String({ description: "shown here once; keep it where the receiver checks signatures" }) }),
]);

export const WebhookResponse = T.Object({ data: WebhookRecord });
export const WebhookCreatedResponse = T.Object({ data: WebhookWithSecret });
export const WebhookListResponse = T.Object({ data: T.Object({ webhooks: T.Array(WebhookRecord) }) });

export const IdParams = T.Object({ id: T.String() });

export const ListDeliveriesQuery = T.Object({
  limit: T.Optional(Limit(DELIVERIES_LIMIT)),
  pageToken: T.Optional(PageToken),
  webhook_id: T.Optional(T.String()),
  state: T.Optional(
    T.Union([T.Literal("pending"), T.Literal("delivered"), T.Literal("failed")], {
      error: "must be pending, delivered or failed",
    }),
  ),
  event_type: T.Optional(T.Union([...EVENT_TYPES.map((e) => T.Literal(e)), T.Literal(TEST_EVENT)])),
});
export type ListDeliveriesQuery = Static<typeof ListDeliveriesQuery>;

export const DeliveryRecord = T.Object({
  id: T.Integer(),
  webhook_id: T.String(),
  event_id: T.String(),
  event_type: T.String(),
  state: T.Union([T.Literal("pending"), T.Literal("delivered"), T.Literal("failed")]),
  attempts: T.Integer(),
  next_attempt_at: T.Union([T.String(), T.Null()], { description: "set while pending" }),
  last_attempt_at: T.Union([T.String(), T.Null()]),
  last_status: T.Union([T.Integer(), T.Null()], { description: "the receiver's HTTP status" }),
  last_error: T.Union([T.String(), T.Null()]),
  delivered_at: T.Union([T.String(), T.Null()]),
  created_at: T.String(),
  payload: T.String({ description: "the JSON body, as sent and signed" }),
});
export type DeliveryRecord = Static<typeof DeliveryRecord>;

export const DeliveryResponse = T.Object({ data: DeliveryRecord });
export const DeliveryListResponse = T.Object({
  data: T.Object({ deliveries: T.Array(DeliveryRecord), next_page_token: NextPageToken }),
});
