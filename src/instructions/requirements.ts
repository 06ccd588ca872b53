/**
 * One payment requirement, from what a client (API body) or a pricing file
 * (YAML) says to what is stored: canonical v1 network name, EIP-55 addresses,
 * the amount as a canonical decimal string. Shared by the management API and
 * the pricing loader so both accept and refuse exactly the same things.
 */
import { ValueErrorType } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";
import { getAddress, zeroAddress } from "viem";
import { canonicalNetwork, usdcAddress } from "../chain/networks";
import type { Settings } from "../settings";
import { type PaymentRequirement, PaymentRequirementInput } from "./model";

export type StoredRequirement = PaymentRequirement;
export interface FieldError {
  path: string;
  message: string;
}
export type NormalizeResult = { ok: true; value: StoredRequirement } | { ok: false; errors: FieldError[] };

const MAX_UINT256 = 2n ** 256n - 1n;

const join = (at: string, key: string) => (at ? (key ? `${at}.${key}` : at) : key);

/** TypeBox errors of `schema` for `value`, as `{path, message}` with dotted paths, one per path. */
export function schemaErrors(schema: Parameters<typeof Value.Errors>[0], value: unknown, at = ""): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of Value.Errors(schema, value)) {
    const rel = e.path.replace(/^\//, "").replaceAll("/", ".");
    const path = join(at, rel) || "(root)";
    if (seen.has(path)) continue;
    seen.add(path);
    // A field nobody declared gets a plainer message than TypeBox's.
    const custom = (e.schema as { error?: unknown }).error;
    const message =
      e.type === ValueErrorType.ObjectAdditionalProperties
        ? "unknown field"
        : typeof custom === "string"
          ? custom
          : e.message;
    out.push({ path, message });
  }
  return out;
}

/**
 * Validates and normalizes one requirement. `at` prefixes error paths
 * (e.g. "payment_requirements.0" or a YAML key). Also accepts the older Pinata
 * field `max_amount_required` for `amount`, and (for YAML, where `amount: 10000`
 * is a number) a whole number for either.
 */
export function normalizeRequirement(
  input: unknown,
  settings: Pick<Settings, "usdcAddressBase" | "usdcAddressBaseSepolia">,
  at = "",
): NormalizeResult {
  let candidate = input;
  if (input !== null && typeof input === "object" && !Array.isArray(input)) {
    const copy: Record<string, unknown> = { ...(input as Record<string, unknown>) };
    for (const key of ["amount", "max_amount_required"]) {
      if (typeof copy[key] === "number" && Number.isSafeInteger(copy[key])) copy[key] = String(copy[key]);
    }
    candidate = copy;
  }
  const shapeErrors = schemaErrors(PaymentRequirementInput, candidate, at);
  if (shapeErrors.length > 0) return { ok: false, errors: shapeErrors };
  const r = candidate as PaymentRequirementInput;
  const errors: FieldError[] = [];

  const network = canonicalNetwork(r.network);
  if (!network)
    errors.push({ path: join(at, "network"), message: "must be one of base, base-sepolia, eip155:8453, eip155:84532" });

  let asset: `0x${string}` | undefined;
  if (network) {
    const usdc = usdcAddress(network, settings);
    if (r.asset.toLowerCase() !== usdc.toLowerCase()) {
      errors.push({ path: join(at, "asset"), message: `must be the USDC contract on ${network} (${usdc})` });
    } else asset = usdc;
  }

  const payTo = getAddress(r.pay_to.toLowerCase());
  if (payTo === zeroAddress) errors.push({ path: join(at, "pay_to"), message: "must not be the zero address" });

  let amount: string | undefined;
  if (
    r.amount !== undefined &&
    r.max_amount_required !== undefined &&
    BigInt(r.amount) !== BigInt(r.max_amount_required)
  ) {
    errors.push({ path: join(at, "max_amount_required"), message: "differs from amount; send only amount" });
  } else {
    const raw = r.amount ?? r.max_amount_required;
    if (raw === undefined) errors.push({ path: join(at, "amount"), message: "is required" });
    else {
      const n = BigInt(raw);
      if (n <= 0n || n > MAX_UINT256) {
        errors.push({
          path: join(at, "amount"),
          message: "must be a positive integer string in USDC's smallest unit (1 USDC = 1000000)",
        });
      } else amount = n.toString();
    }
  }

  if (errors.length > 0 || !network || !asset || !amount) return { ok: false, errors };
  const value: StoredRequirement = { network, asset, pay_to: payTo, amount };
  if (r.description !== undefined && r.description !== "") value.description = r.description;
  return { ok: true, value };
}

/**
 * A whole list: each item normalized, and no two requirements for the same
 * network, asset and receiver (the gateway could not tell which one a payment meant).
 */
export function normalizeRequirements(
  list: readonly unknown[],
  settings: Pick<Settings, "usdcAddressBase" | "usdcAddressBaseSepolia">,
  at = "payment_requirements",
): { ok: true; value: StoredRequirement[] } | { ok: false; errors: FieldError[] } {
  const value: StoredRequirement[] = [];
  const errors: FieldError[] = [];
  const seen = new Map<string, number>();
  for (const [i, item] of list.entries()) {
    const r = normalizeRequirement(item, settings, join(at, String(i)));
    if (!r.ok) {
      errors.push(...r.errors);
      continue;
    }
    const key = `${r.value.network}|${r.value.asset}|${r.value.pay_to}`;
    const first = seen.get(key);
    if (first !== undefined) {
      errors.push({
        path: join(at, String(i)),
        message: `repeats the network, asset and pay_to of ${join(at, String(first))}`,
      });
    } else seen.set(key, i);
    value.push(r.value);
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value };
}
