/**
 * The whole SQLite schema. Each module owns its tables (see the comment on
 * each) and others reach them only through that module's store or functions.
 * Times are ISO 8601 UTC strings so that they sort and read the same.
 */

import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

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
    // The background reconciliation's scan (ledger/reconcile.ts): pending rows only, a handful.
    index("payments_pending").on(t.id).where(sql`state = 'pending'`),
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
