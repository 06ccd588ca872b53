/**
 * The shape of a pricing file (config/*.yaml), declared once. The loader
 * validates against it and scripts/pricing-schema.ts turns it into the JSON
 * Schema that editors use (schema/pricing.schema.json). Rules that a schema
 * cannot say well (amount xor price, exact prices, addresses, CIDs, globs)
 * are checked in load.ts with the same positions and error format.
 */
import { type Static, Type as t } from "@sinclair/typebox";
import { NETWORK_SPELLINGS } from "../chain/networks";
import { MAX_DESCRIPTION, MAX_NAME, MAX_REQUIREMENT_DESCRIPTION, MAX_REQUIREMENTS } from "../instructions/model";
import { NotificationsModel } from "../notifications/config";

/** Instruction keys end up in `source` ("file:<path>#<key>"): keep them plain. */
export const KEY_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$";

/** A value an editor cannot check: it comes from `${VAR}` at load time. */
const ENV_REF = "\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}";

const Network = t.Union([...NETWORK_SPELLINGS.map((n) => t.Literal(n)), t.String({ pattern: ENV_REF })], {
  description: 'Network: "base" or "base-sepolia" (the CAIP-2 ids eip155:8453 and eip155:84532 are accepted too).',
});

/** A 0x address, or a `${VAR}` that becomes one (editors see the file before substitution). */
const address = (description: string) => t.String({ description, pattern: `^(0x[0-9a-fA-F]{40}|.*${ENV_REF}.*)$` });

export const RequirementModel = t.Object(
  {
    network: t.Optional(Network),
    pay_to: t.Optional(address("Address that receives the payment.")),
    price: t.Optional(
      t.String({
        description:
          'Price in US dollars, exact to the cent fraction USDC allows: "$0.05", "$1", "$0.000001". Needs the USDC asset.',
        // No pattern here: load.ts explains a wrong price better than a regex failure would.
        examples: ["$0.05"],
      }),
    ),
    amount: t.Optional(
      // Checked by the API's own rule (instructions/requirements.ts), so both say the same thing.
      t.Union([t.String(), t.Number()], {
        description: "Amount in the asset's smallest unit (USDC has 6 decimals: 10000 = $0.01). Give price or amount.",
      }),
    ),
    asset: t.Optional(address("Token contract. Defaults to the network's USDC.")),
    description: t.Optional(t.String({ maxLength: MAX_REQUIREMENT_DESCRIPTION })),
  },
  { additionalProperties: false, description: "One way to pay: give either price or amount." },
);

export const InstructionModel = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: MAX_NAME }),
    description: t.Optional(t.String({ maxLength: MAX_DESCRIPTION })),
    payment_requirements: t.Array(RequirementModel, { minItems: 1, maxItems: MAX_REQUIREMENTS }),
    cids: t.Optional(t.Array(t.String({ description: "An IPFS CID (v0 Qm... or v1)." }))),
    files: t.Optional(
      t.Array(
        t.String({
          description:
            'A path or glob under the content folder, e.g. "articles/*.md"; new matching files are picked up.',
        }),
      ),
    ),
    access: t.Optional(
      // A number is let through to load.ts, which says it needs a unit rather than "expected string".
      t.Union([t.String(), t.Number()], {
        description:
          'What a payment buys beyond its proof: "forever" (default), "once" (nothing), or a duration such as 30d, 12h, 2w, 90m.',
        examples: ["forever", "once", "30d"],
      }),
    ),
    access_scope: t.Optional(
      t.Union([t.Literal("cid"), t.Literal("instruction")], {
        description:
          'What a payment opens: "cid" (default), the file paid for; "instruction", every file of this instruction.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const DefaultsModel = t.Object(
  {
    network: t.Optional(Network),
    pay_to: t.Optional(address("Address that receives the payment.")),
  },
  {
    additionalProperties: false,
    description: "Given to every payment requirement of this file that does not say otherwise.",
  },
);

/** How the paid file is handed over: a download, or shown in the browser (media and PDF only). */
export const DispositionModel = t.Union([t.Literal("attachment"), t.Literal("inline")], {
  description:
    '"attachment" (default): the browser saves the file under its name. "inline": images, audio, video and PDF open in the browser; other files are still saved.',
});

/** The buyer-facing pages (src/paywall/): what the paywall and the storefront show. */
export const SiteModel = t.Object(
  {
    name: t.Optional(t.String({ minLength: 1, maxLength: 80, description: "Site name shown on every page." })),
    logo: t.Optional(
      t.String({ minLength: 1, maxLength: 1024, description: "A file under the content folder, e.g. brand/logo.svg." }),
    ),
    disposition: t.Optional(DispositionModel),
  },
  { additionalProperties: false, description: "The paywall page. One pricing file at most may say it." },
);

export const StorefrontModel = t.Object(
  { list: t.Boolean({ description: "true: / lists every file for sale. Default false: / says nothing." }) },
  { additionalProperties: false, description: "The optional storefront at /." },
);

export const PricingFileModel = t.Object(
  {
    defaults: t.Optional(DefaultsModel),
    site: t.Optional(SiteModel),
    storefront: t.Optional(StorefrontModel),
    notifications: t.Optional(NotificationsModel),
    instructions: t.Optional(
      t.Record(t.String({ pattern: KEY_PATTERN }), InstructionModel, {
        additionalProperties: false,
        description: "Payment instructions by stable key: the key keeps an instruction's id across edits.",
      }),
    ),
  },
  {
    additionalProperties: false,
    title: "cidgate pricing file",
    description: "Declarative payment instructions for cidgate (config/*.yaml).",
  },
);

export type PricingFile = Static<typeof PricingFileModel>;
