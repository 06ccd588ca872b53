/**
 * The management API's wire shapes, declared once as TypeBox schemas: Elysia
 * validates requests with them, the OpenAPI document is generated from them,
 * the YAML pricing loader checks requirements with them (requirements.ts),
 * and the TypeScript types are derived from them.
 *
 * Field names follow the `pinata` SDK's x402 types (PaymentInstruction,
 * PaymentRequirement, CidAssociation, the list responses). `source`,
 * `updated_at`, `access` and `access_scope` are cidgate's additions: optional
 * on input (the SDK never sends them), answered always; extra fields do not
 * disturb the SDK.
 * Each schema's `error` is the message a client sees for that field.
 */

import { type Static, Type as T } from "@sinclair/typebox";
import { NETWORK_SPELLINGS } from "../chain/networks";
import { ACCESS_RULE } from "../entitlements/policy";
import { Limit, NextPageToken, PageToken } from "../http/paging";

export const MAX_REQUIREMENTS = 16;
export const MAX_NAME = 255;
export const MAX_DESCRIPTION = 1024;
export const MAX_REQUIREMENT_DESCRIPTION = 255;

const Address = (what: string) =>
  T.String({
    pattern: "^0[xX][0-9a-fA-F]{40}$",
    description: `${what}: 0x-prefixed 20-byte address (any case; answered EIP-55 checksummed)`,
    error: "must be a 0x-prefixed 20-byte hex address",
  });

const Amount = (description: string) =>
  T.String({
    pattern: "^[0-9]{1,78}$",
    description,
    examples: ["10000"],
    error: "must be a positive integer string in USDC's smallest unit (1 USDC = 1000000)",
  });

/** A payment requirement as clients send it (any of the four network spellings). */
export const PaymentRequirementInput = T.Object(
  {
    network: T.Union(
      NETWORK_SPELLINGS.map((n) => T.Literal(n)),
      {
        description: "base, base-sepolia, eip155:8453 or eip155:84532",
        error: `must be one of ${NETWORK_SPELLINGS.join(", ")}`,
      },
    ),
    asset: Address("the USDC contract of the network"),
    pay_to: Address("the wallet that receives payments"),
    amount: T.Optional(Amount("price in USDC's smallest unit (6 decimals): 10000 = $0.01")),
    max_amount_required: T.Optional(Amount("older Pinata name of `amount`, accepted on input")),
    description: T.Optional(
      T.String({
        maxLength: MAX_REQUIREMENT_DESCRIPTION,
        error: `must be a string of at most ${MAX_REQUIREMENT_DESCRIPTION} characters`,
      }),
    ),
  },
  { additionalProperties: false, error: "must be an object with network, asset, pay_to and amount" },
);
export type PaymentRequirementInput = Static<typeof PaymentRequirementInput>;

/** A payment requirement as stored and answered: canonical network, checksummed addresses. */
export const PaymentRequirement = T.Object({
  network: T.Union([T.Literal("base"), T.Literal("base-sepolia")]),
  asset: T.String({ description: "EIP-55 checksummed USDC contract" }),
  pay_to: T.String({ description: "EIP-55 checksummed receiving wallet" }),
  amount: T.String({ description: "price in USDC's smallest unit" }),
  description: T.Optional(T.String()),
});
export type PaymentRequirement = Static<typeof PaymentRequirement>;

const Name = T.String({
  minLength: 1,
  maxLength: MAX_NAME,
  error: `must be a non-empty string of at most ${MAX_NAME} characters`,
});
const Description = T.String({
  maxLength: MAX_DESCRIPTION,
  error: `must be a string of at most ${MAX_DESCRIPTION} characters`,
});
/** Checked by parseAccessPolicy in the store; the schema only says it is text, with the rule for the docs. */
const Access = T.String({
  maxLength: 16,
  description:
    'cidgate extension: what a payment buys beyond its proof. "forever" (default), "once", or a duration "30d", "12h", "2w", "90m"',
  examples: ["forever", "once", "30d"],
  error: ACCESS_RULE,
});
const AccessScope = T.Union([T.Literal("cid"), T.Literal("instruction")], {
  description:
    'cidgate extension: what the entitlement covers. "cid" (default): the CID paid for; "instruction": every CID of this instruction',
  error: 'must be "cid" or "instruction"',
});

/**
 * The body's requirements as Elysia sees them: the same fields, but an undeclared one is let
 * through rather than silently dropped (Elysia's normalize strips what a schema does not
 * declare before anyone validates). normalizeRequirements, shared with the pricing files,
 * then refuses it with "unknown field", so the API and YAML apply one rule set.
 */
const RequirementInBody = T.Object(PaymentRequirementInput.properties, {
  additionalProperties: true,
  error: "must be an object with network, asset, pay_to and amount",
});

const Requirements = T.Array(RequirementInBody, {
  minItems: 1,
  maxItems: MAX_REQUIREMENTS,
  error: `must be a list of 1 to ${MAX_REQUIREMENTS} payment requirements`,
});

export const CreateInstructionBody = T.Object(
  {
    name: Name,
    description: T.Optional(Description),
    payment_requirements: Requirements,
    access: T.Optional(Access),
    access_scope: T.Optional(AccessScope),
  },
  { error: "must be a JSON object with name and payment_requirements" },
);
export type CreateInstructionBody = Static<typeof CreateInstructionBody>;

export const UpdateInstructionBody = T.Object(
  {
    name: T.Optional(Name),
    /** `null` or "" clears the description. */
    description: T.Optional(
      T.Union([Description, T.Null()], { error: `must be a string of at most ${MAX_DESCRIPTION} characters, or null` }),
    ),
    payment_requirements: T.Optional(Requirements),
    access: T.Optional(Access),
    access_scope: T.Optional(AccessScope),
  },
  { error: "must be a JSON object with at least one of name, description, payment_requirements, access, access_scope" },
);
export type UpdateInstructionBody = Static<typeof UpdateInstructionBody>;

// No `format` on answered fields: responses are validated, and the uuid and
// date-time format checks cost ~5 µs per instruction (a 1000-item page took 9 ms
// instead of 2 ms); the descriptions carry the same information for the docs.
export const PaymentInstruction = T.Object({
  id: T.String({ description: "UUIDv7" }),
  version: T.Integer({ minimum: 1, description: "1 at creation, +1 on each update that changes something" }),
  name: T.String(),
  description: T.Optional(T.String()),
  payment_requirements: T.Array(PaymentRequirement),
  created_at: T.String({ description: "ISO 8601 UTC" }),
  updated_at: T.String({ description: "ISO 8601 UTC" }),
  source: T.String({
    description: '"api", or "file:<pricing file>#<key>" when declared in a pricing YAML file (then read-only here)',
  }),
  access: T.String({ description: 'cidgate extension: "forever", "once" or a duration such as "30d"' }),
  access_scope: T.Union([T.Literal("cid"), T.Literal("instruction")], {
    description: 'cidgate extension: "cid" or "instruction"',
  }),
});
export type PaymentInstruction = Static<typeof PaymentInstruction>;

export const InstructionResponse = T.Object({ data: PaymentInstruction });

export const InstructionListResponse = T.Object({
  data: T.Object({
    payment_instructions: T.Array(PaymentInstruction),
    next_page_token: NextPageToken,
  }),
});

export const CidAssociation = T.Object({
  payment_instruction_id: T.String(),
  cid: T.String({ description: "normalized: CIDv1 in base32, CIDv0 as Qm..." }),
  created_at: T.String({ description: "ISO 8601 UTC" }),
});
export type CidAssociation = Static<typeof CidAssociation>;

export const CidAssociationResponse = T.Object({ data: CidAssociation });

export const CidListResponse = T.Object({
  data: T.Object({
    cids: T.Array(T.String()),
    next_page_token: NextPageToken,
  }),
});

export const EmptyResponse = T.Object({ data: T.Object({}) });

export const INSTRUCTIONS_LIMIT = { max: 1000, fallback: 10 } as const;
export const CIDS_LIMIT = { max: 1000, fallback: 20 } as const;

export const ListInstructionsQuery = T.Object({
  limit: T.Optional(Limit(INSTRUCTIONS_LIMIT)),
  pageToken: T.Optional(PageToken),
  cid: T.Optional(T.String({ description: "only the instruction this CID is attached to (at most one)" })),
  name: T.Optional(T.String({ description: "exact name" })),
  id: T.Optional(T.String({ description: "exact id" })),
});
export type ListInstructionsQuery = Static<typeof ListInstructionsQuery>;

export const ListCidsQuery = T.Object({
  limit: T.Optional(Limit(CIDS_LIMIT)),
  pageToken: T.Optional(PageToken),
});
export type ListCidsQuery = Static<typeof ListCidsQuery>;

export const IdParams = T.Object({ id: T.String() });
export const CidParams = T.Object({ id: T.String(), cid: T.String() });

export const ErrorResponse = T.Object({
  error: T.Object({
    code: T.String(),
    message: T.String(),
    details: T.Optional(T.Array(T.Object({ path: T.String(), message: T.String() }))),
  }),
});
