/**
 * The whole SQLite schema. Each module owns its tables (see the comment on
 * each) and others reach them only through that module's store or functions.
 * Times are ISO 8601 UTC strings so that they sort and read the same.
 */

import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Owned by instructions/. `source` is "api" or "file:<config file>#<key>". */
export const paymentInstructions = sqliteTable(
  "payment_instructions",
  {
    id: text("id").primaryKey(), // UUIDv7: sorts by creation time, so it is the paging key too
    version: integer("version").notNull().default(1),
    name: text("name").notNull(),
    description: text("description"),
    /** JSON array of stored requirements (canonical network, checksummed addresses). */
    requirements: text("requirements", { mode: "json" }).notNull(),
    source: text("source").notNull().default("api"),
    /** What a payment buys beyond its proof: "forever", "once" or a duration ("30d"); see entitlements/policy.ts. */
    access: text("access").notNull().default("forever"),
    /** "cid" (the CID paid for) or "instruction" (every CID of this instruction). */
    accessScope: text("access_scope", { enum: ["cid", "instruction"] })
      .notNull()
      .default("cid"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("payment_instructions_name_id").on(t.name, t.id), index("payment_instructions_source").on(t.source)],
);

/** Owned by instructions/. One instruction per CID. */
export const cidMappings = sqliteTable(
  "cid_mappings",
  {
    cid: text("cid").primaryKey(),
    instructionId: text("instruction_id")
      .notNull()
      .references(() => paymentInstructions.id),
    source: text("source").notNull().default("api"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("cid_mappings_instruction").on(t.instructionId, t.cid)],
);

/** Owned by content/. A cache so that files are hashed once per change, never per request. */
export const contentFiles = sqliteTable(
  "content_files",
  {
    path: text("path").primaryKey(), // relative to the content folder, "/"-separated
    cid: text("cid").notNull(),
    size: integer("size").notNull(),
    mtimeMs: integer("mtime_ms").notNull(),
    mediaType: text("media_type").notNull(),
    // With size and mtime, what tells a rewritten file from the one hashed (`touch -d` keeps
    // size and mtime; a rewrite moves ctime, an editor's rename the inode). ctime in whole microseconds; 0: not known yet.
    ino: integer("ino").notNull().default(0),
    ctimeUs: integer("ctime_us").notNull().default(0),
  },
  (t) => [index("content_files_cid").on(t.cid)],
);

/** Owned by ledger/. One row per authorization, ever: also the replay guard. */
export const payments = sqliteTable(
  "payments",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    network: text("network").notNull(), // canonical v1 name
    asset: text("asset").notNull(),
    payer: text("payer").notNull(),
    nonce: text("nonce").notNull(),
    cid: text("cid").notNull(),
    instructionId: text("instruction_id").notNull(),
    instructionVersion: integer("instruction_version").notNull(),
    amount: text("amount").notNull(),
    payTo: text("pay_to").notNull(),
    state: text("state", { enum: ["pending", "settled", "failed"] }).notNull(),
    txHash: text("tx_hash"),
    validBefore: integer("valid_before").notNull(),
    x402Version: integer("x402_version").notNull(),
    /** sha256 of the signature: tells a re-presented proof from another one with the same nonce. */
    proofHash: text("proof_hash").notNull(),
    error: text("error"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("payments_authorization").on(t.network, t.asset, t.payer, t.nonce),
    index("payments_cid").on(t.cid, t.id),
    index("payments_payer").on(t.payer, t.id),
    index("payments_instruction").on(t.instructionId, t.id),
    index("payments_created").on(t.createdAt),
    // The payer filter compares without case (any spelling finds a wallet): without this, a scan of every row.
    index("payments_payer_lower").on(sql`lower(${t.payer})`, t.id),
    // The pending settlements (the background reconciliation's scan, the /metrics gauge, "needs attention"):
    // few rows, so a small partial index.
    index("payments_pending").on(t.id).where(sql`${t.state} = 'pending'`),
  ],
);

/**
 * Owned by entitlements/. A payer's right to a CID (scope "cid") or to every
 * CID of an instruction (scope "instruction"), from a settled payment or a
 * manual grant. Never deleted: a revoke stamps `revoked_at`, so the history
 * of who could download what stays readable.
 */
export const entitlements = sqliteTable(
  "entitlements",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    payer: text("payer").notNull(), // EIP-55 checksummed
    scope: text("scope", { enum: ["cid", "instruction"] }).notNull(),
    cid: text("cid"), // set for scope "cid"
    instructionId: text("instruction_id").notNull(), // the instruction it came from
    source: text("source", { enum: ["payment", "grant"] }).notNull(),
    paymentId: integer("payment_id").references(() => payments.id),
    grantedAt: text("granted_at").notNull(),
    expiresAt: integer("expires_at"), // unix seconds; null = never
    revokedAt: text("revoked_at"),
    note: text("note"),
  },
  (t) => [
    index("entitlements_payer_cid").on(t.payer, t.cid),
    index("entitlements_payer_instruction").on(t.payer, t.instructionId),
    // One entitlement per payment: what makes grantForPayment idempotent (NULLs, the grants, do not collide).
    uniqueIndex("entitlements_payment").on(t.paymentId),
  ],
);

/**
 * Owned by entitlements/siwx-nonces.ts. A sign-in-with-x nonce once used, so
 * that a signed sign-in is accepted once even across processes sharing the
 * file. Rows older than a nonce's lifetime can never match again: pruned.
 */
export const siwxNonces = sqliteTable(
  "siwx_nonces",
  {
    nonce: text("nonce").primaryKey(),
    usedAt: integer("used_at").notNull(), // unix seconds
  },
  (t) => [index("siwx_nonces_used_at").on(t.usedAt)],
);

/**
 * Owned by ledger/payment-identifiers.ts. The x402 `payment-identifier`
 * extension's idempotency keys: the same id with the same payload is the same
 * request (its payment, once known), the same id with another payload a conflict.
 */
export const paymentIdentifiers = sqliteTable("payment_identifiers", {
  id: text("id").primaryKey(),
  /** sha256 of the payment payload the id first came with. */
  payloadHash: text("payload_hash").notNull(),
  paymentId: integer("payment_id"),
  createdAt: text("created_at").notNull(),
});

/**
 * Owned by tokens/store.ts. One row per management token made by
 * `cidgate token create` (the token itself is never stored: its id is the
 * JWT's `jti`). `revoked_at` set: the server refuses the token from the next
 * request on, whichever process revoked it. A token without a row (made
 * before this table existed) is accepted until it expires unless revoked by
 * `cidgate token revoke <token>`, which adds its row.
 */
export const managementTokens = sqliteTable("management_tokens", {
  id: text("id").primaryKey(),
  /** Space-separated, as in the token's `scope` claim. */
  scopes: text("scopes").notNull(),
  label: text("label"),
  createdAt: text("created_at").notNull(),
  expiresAt: text("expires_at").notNull(),
  revokedAt: text("revoked_at"),
});

/** The columns of a sales rollup row: settled sales and their amounts. */
const salesColumns = () => ({
  sales: integer("sales").notNull(),
  /**
   * Sum of the settled amounts of up to 15 digits (< $1e9 each), smallest unit: 64-bit, so a row
   * would need 9,000 payments of $1e9 to overflow it.
   */
  amount: integer("amount").notNull(),
  /** Settled payments of 16 digits or more, not in `amount`: a read that meets one sums the ledger instead. */
  oversized: integer("oversized").notNull().default(0),
});

/*
 * The sales rollups, read by stats/queries.ts, written ONLY by the SQLite
 * triggers on `payments` in drizzle/0006_stats.sql. A payment counts while it
 * is settled, in the hour of its `created_at` ("YYYY-MM-DDTHH", UTC). The
 * triggers run inside the statement that changes a payment, so the rollups
 * commit or roll back with it and agree with the ledger whoever writes the
 * ledger (test/stats/rollup.test.ts checks it). Three grains, so that each
 * question reads few rows at a million payments: the whole shop per hour,
 * one instruction per hour, and all time per instruction.
 */
export const salesHourly = sqliteTable(
  "sales_hourly",
  {
    hour: text("hour").notNull(),
    network: text("network").notNull(),
    asset: text("asset").notNull(),
    ...salesColumns(),
  },
  (t) => [primaryKey({ columns: [t.hour, t.network, t.asset] })],
);

export const salesInstructionHourly = sqliteTable(
  "sales_instruction_hourly",
  {
    instructionId: text("instruction_id").notNull(),
    hour: text("hour").notNull(),
    network: text("network").notNull(),
    asset: text("asset").notNull(),
    ...salesColumns(),
  },
  (t) => [
    primaryKey({ columns: [t.instructionId, t.hour, t.network, t.asset] }),
    index("sales_instruction_hourly_hour").on(t.hour),
  ],
);

export const salesTotals = sqliteTable(
  "sales_totals",
  {
    instructionId: text("instruction_id").notNull(),
    network: text("network").notNull(),
    asset: text("asset").notNull(),
    ...salesColumns(),
  },
  (t) => [primaryKey({ columns: [t.instructionId, t.network, t.asset] })],
);

/*
 * Owned by stats/counters.ts, their only writer: 402 offers shown and payment
 * proofs presented, added from in-memory counters every few seconds and at a
 * clean stop (the 402 path never writes to SQLite), all three in one
 * transaction: per hour and CID, per hour and instruction, per hour for the
 * whole shop (so a month of the shop reads ~720 rows, not one per CID).
 */
export const funnelHourly = sqliteTable(
  "funnel_hourly",
  {
    cid: text("cid").notNull(),
    hour: text("hour").notNull(),
    instructionId: text("instruction_id").notNull(),
    offers: integer("offers").notNull(),
    proofs: integer("proofs").notNull(),
  },
  (t) => [primaryKey({ columns: [t.cid, t.hour, t.instructionId] }), index("funnel_hourly_hour").on(t.hour)],
);

export const funnelInstructionHourly = sqliteTable(
  "funnel_instruction_hourly",
  {
    instructionId: text("instruction_id").notNull(),
    hour: text("hour").notNull(),
    offers: integer("offers").notNull(),
    proofs: integer("proofs").notNull(),
  },
  (t) => [primaryKey({ columns: [t.instructionId, t.hour] }), index("funnel_instruction_hourly_hour").on(t.hour)],
);

export const funnelShopHourly = sqliteTable("funnel_shop_hourly", {
  hour: text("hour").primaryKey(),
  offers: integer("offers").notNull(),
  proofs: integer("proofs").notNull(),
});

/**
 * Owned by notifications/store.ts. Where webhooks go: declared in a pricing
 * file's `notifications:` section (`source` "file:<path>#<key>", kept in step
 * by every reload) or made through /v3/x402/webhooks (`source` "api").
 */
export const webhooks = sqliteTable(
  "webhooks",
  {
    id: text("id").primaryKey(), // "wh_" + UUIDv7
    url: text("url").notNull(),
    /** HMAC-SHA256 key of the `Cidgate-Signature` header. */
    secret: text("secret").notNull(),
    /** JSON array of event types; empty: every event. */
    events: text("events", { mode: "json" }).$type<string[]>().notNull(),
    description: text("description"),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    source: text("source").notNull().default("api"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("webhooks_source").on(t.source)],
);

/**
 * Owned by notifications/store.ts. The outbox and the delivery log in one:
 * a row per event per webhook, written in the transaction of the change it
 * reports (a settled payment, a grant...), sent later by the dispatcher
 * (notifications/dispatcher.ts), never on the request's path.
 */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    webhookId: text("webhook_id").notNull(), // no foreign key: the log outlives a deleted webhook
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    /** The JSON body, exactly as it is sent and signed. */
    payload: text("payload").notNull(),
    state: text("state", { enum: ["pending", "delivered", "failed"] }).notNull(),
    attempts: integer("attempts").notNull().default(0),
    /** ISO 8601: when the dispatcher may send it (again). */
    nextAttemptAt: text("next_attempt_at").notNull(),
    lastAttemptAt: text("last_attempt_at"),
    lastStatus: integer("last_status"),
    lastError: text("last_error"),
    deliveredAt: text("delivered_at"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    index("webhook_deliveries_due").on(t.state, t.nextAttemptAt),
    index("webhook_deliveries_webhook").on(t.webhookId, t.id),
    uniqueIndex("webhook_deliveries_event").on(t.webhookId, t.eventId),
  ],
);

/**
 * Owned by ledger/resolutions.ts. What an operator did to a pending payment
 * (`cidgate payments resolve`, POST /v3/x402/payments/{id}/resolve): who,
 * when, what, and on whose word (the chain's, or the operator's when there
 * is no RPC). Never updated or deleted: it is the audit trail.
 */
export const paymentResolutions = sqliteTable(
  "payment_resolutions",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    // No foreign key: failed payments may be pruned, their audit trail stays.
    paymentId: integer("payment_id").notNull(),
    /** What was asked: check the chain, settle (with a transaction), release. */
    action: text("action", { enum: ["check", "settle", "release"] }).notNull(),
    /** The payment's state afterwards. */
    outcome: text("outcome", { enum: ["pending", "settled", "failed"] }).notNull(),
    /** `chain`: read from the chain; `operator`: the operator's word (no RPC for the network). */
    basis: text("basis", { enum: ["chain", "operator"] }).notNull(),
    txHash: text("tx_hash"),
    /** Who: `api:<token subject>/<token id>` or `cli:<OS user>`. */
    actor: text("actor").notNull(),
    note: text("note"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("payment_resolutions_payment").on(t.paymentId, t.id)],
);
