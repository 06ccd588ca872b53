/**
 * Reads every pricing file (config/**\/*.yaml|yml), substitutes `${VAR}`,
 * validates against the TypeBox model and the API's requirement rules, and
 * returns the desired state plus every problem found, each with file, line,
 * column and the rule broken. Nothing here touches the database: sync.ts
 * applies the result only when there is no error at all.
 *
 * Parsing is the costly part, so each file's result is cached by its text
 * and the environment values it uses: a reload after one edit re-reads all
 * files but parses only the edited one.
 */
import { type Dirent, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { type Static, Type as t } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { type ValueError, ValueErrorType } from "@sinclair/typebox/errors";
import { canonicalNetwork, usdcAddress } from "../chain/networks";
import { canonicalCid } from "../content/cid";
import { relativePathProblem } from "../content/paths";
import { ACCESS_RULE, DEFAULT_ACCESS, DEFAULT_ACCESS_SCOPE, parseAccessPolicy } from "../entitlements/policy";
import type { FileInstruction } from "../instructions/file-sync-plan";
import { type FieldError, normalizeRequirements } from "../instructions/requirements";
import { checkNotifications, desiredWebhooks } from "../notifications/config";
import type { DesiredWebhook } from "../notifications/store";
import type { Settings } from "../settings";
import { envUsed, sameEnv } from "./env";
import { fastParse } from "./fast-yaml";
import { type Locator, lazyPosition, type Path, type Position, type PricingProblem, pin } from "./position";
import { priceToAmount } from "./price";
import { DefaultsModel, InstructionModel, KEY_PATTERN, type PricingFile, SiteModel, StorefrontModel } from "./schema";
import { parseWithPositions } from "./strict-yaml";

export { formatProblem, type Position, type PricingProblem, pin } from "./position";

export interface CidClaim {
  cid: string;
  at: Position;
  /** The content file a `files:` entry matched, when the CID came from one. */
  via?: string;
}

export interface FilePattern {
  pattern: string;
  glob: InstanceType<typeof Bun.Glob>;
  /** The path itself when the entry has no glob characters: looked up, not matched against every file. */
  literal?: string;
  at: Position;
}

/** An instruction as a pricing file declares it: what the reconcile writes, plus where it was written. */
export interface DesiredInstruction extends Omit<FileInstruction, "cids"> {
  key: string;
  at: Position;
  cids: CidClaim[];
  files: FilePattern[];
}

/** The buyer-facing pages' settings (`site:`, `storefront:`), from the one file that gives them. */
export interface Presentation {
  site?: Static<typeof SiteModel> & { at: Position };
  storefront?: Static<typeof StorefrontModel> & { at: Position };
}

export interface ParsedFile {
  /** Path relative to the config folder, "/"-separated. */
  path: string;
  instructions: DesiredInstruction[];
  presentation?: Presentation;
  /** The `notifications:` section's webhooks. */
  webhooks: DesiredWebhook[];
  errors: PricingProblem[];
  warnings: PricingProblem[];
}

export interface LoadedPricing {
  files: string[];
  instructions: DesiredInstruction[];
  presentation: Presentation;
  webhooks: DesiredWebhook[];
  errors: PricingProblem[];
  warnings: PricingProblem[];
}

export interface LoadOptions {
  configDir: string;
  settings: Pick<Settings, "usdcAddressBase" | "usdcAddressBaseSepolia">;
  env: Record<string, string | undefined>;
  /** Indexed content files, which `files:` entries are matched against. */
  content: readonly { path: string; cid: string }[];
  /** Reused between reloads so unchanged files are not parsed again. */
  cache?: ParseCache;
}

export type ParseCache = Map<string, { text: string; env: [string, string | undefined][]; parsed: ParsedFile }>;

/** The file without looking inside instructions; each instruction is checked on its own. */
const checkOutline = TypeCompiler.Compile(
  t.Object(
    {
      defaults: t.Optional(DefaultsModel),
      site: t.Optional(SiteModel),
      storefront: t.Optional(StorefrontModel),
      notifications: t.Optional(t.Unknown()), // checked on its own (notifications/config.ts)
      instructions: t.Optional(
        t.Record(t.String({ pattern: KEY_PATTERN }), t.Unknown(), { additionalProperties: false }),
      ),
    },
    { additionalProperties: false },
  ),
);
const checkInstruction = TypeCompiler.Compile(InstructionModel);

/** Reports a value's schema errors (one per path, in words a creator can act on); true when there are none. */
function schemaProblems(
  check: { Check(v: unknown): boolean; Errors(v: unknown): Iterable<ValueError> },
  value: unknown,
  prefix: string[],
  where: Locator,
  problem: (at: Position, rule: string, message: string) => void,
): boolean {
  if (check.Check(value)) return true;
  const seen = new Set<string>();
  for (const e of check.Errors(value)) {
    if (seen.has(e.path)) continue;
    seen.add(e.path);
    const segs = [
      ...prefix,
      ...e.path
        .split("/")
        .slice(1)
        .map((x) => x.replaceAll("~1", "/").replaceAll("~0", "~")),
    ];
    const unknown = e.type === ValueErrorType.ObjectAdditionalProperties;
    const field = segs[segs.length - 1];
    const label = segs.join(".") || "(file)";
    let message = `${label}: ${e.message.toLowerCase()}`;
    if (unknown && segs.length === 2 && segs[0] === "instructions") {
      message = `instruction key "${field}" may use only letters, digits, "_", "." and "-" (at most 100)`;
    } else if (unknown) message = `${label}: unknown field "${field}"`;
    else if (e.type === ValueErrorType.ObjectRequiredProperty) message = `${label}: is required`;
    else if (e.type === ValueErrorType.StringPattern && (field === "pay_to" || field === "asset")) {
      message = `${label}: must be a 0x-prefixed 20-byte hex address`;
    } else if (field === "network" && e.type === ValueErrorType.Union) {
      message = `${label}: must be one of base, base-sepolia, eip155:8453, eip155:84532`;
    } else if (field === "access_scope" && e.type === ValueErrorType.Union) {
      message = `${label}: must be "cid" or "instruction"`;
    }
    problem(where.at(segs, unknown), RULES[e.type] ?? "type", message);
  }
  return false;
}

/** Every *.yaml / *.yml under `configDir`, relative and sorted; hidden names are editors' and tools' own. */
export function findPricingFiles(configDir: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (e) {
      if (dir === configDir && (e as NodeJS.ErrnoException).code === "ENOENT") return;
      throw e;
    }
    for (const entry of entries) {
      if (entry.name.startsWith(".")) continue;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if ((entry.isFile() || entry.isSymbolicLink()) && /\.ya?ml$/i.test(entry.name)) {
        out.push(relative(configDir, full).split(/[\\/]/).join("/"));
      }
    }
  };
  walk(configDir);
  return out.sort();
}

const RULES: Partial<Record<ValueErrorType, string>> = {
  [ValueErrorType.ObjectRequiredProperty]: "required",
  [ValueErrorType.ObjectAdditionalProperties]: "unknown-field",
  [ValueErrorType.StringPattern]: "format",
  [ValueErrorType.StringMinLength]: "length",
  [ValueErrorType.StringMaxLength]: "length",
  [ValueErrorType.ArrayMinItems]: "count",
  [ValueErrorType.ArrayMaxItems]: "count",
  [ValueErrorType.IntegerMinimum]: "range",
};

/** Parses and checks one file. Pure: the same text and environment give the same result. */
export function parsePricingFile(
  path: string,
  text: string,
  opts: Pick<LoadOptions, "configDir" | "settings" | "env">,
): ParsedFile {
  const display = join(opts.configDir, path);
  // Fast path: Bun's native parser, positions only when someone asks for one.
  // Any doubt, and any problem at all, goes to the slow path, which decides
  // and reports with exact positions.
  const fast = fastParse(text, opts.env);
  if (fast) {
    let slow: ReturnType<typeof parseWithPositions> | undefined;
    const located = () => (slow ??= parseWithPositions(text, display, opts.env)).locator;
    const lazy: Locator = {
      at: (p, onKey) => lazyPosition(display, () => located().at(p, onKey)),
      integerSource: () => undefined, // an unsafe integer sends the file to the slow path instead
      has: (p) =>
        p.reduce<unknown>(
          (v, k) => (v && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined),
          fast,
        ) !== undefined,
    };
    const checked = checkData(fast, lazy, path, opts);
    if (checked && checked.errors.length === 0)
      return {
        path,
        instructions: checked.instructions,
        presentation: checked.presentation,
        webhooks: checked.webhooks,
        errors: [],
        warnings: [],
      };
  }
  const slow = parseWithPositions(text, display, opts.env);
  if (slow.data === undefined)
    return { path, instructions: [], webhooks: [], errors: slow.errors, warnings: slow.warnings };
  const checked = checkData(slow.data, slow.locator, path, opts)!;
  return {
    path,
    instructions: checked.instructions,
    presentation: checked.presentation,
    webhooks: checked.webhooks,
    errors: checked.errors,
    warnings: slow.warnings,
  };
}

type Defaults = Static<typeof DefaultsModel>;
type Instruction = Static<typeof InstructionModel>;
type Requirement = Instruction["payment_requirements"][number];
type RequirementInput = { network?: string; pay_to?: string; amount?: string; asset: string; description?: string };

/** Where checks look up positions and how they report: shared by the steps below. */
interface Check {
  where: Locator;
  problem(at: Position, rule: string, message: string): void;
}

/** Returned by a step when the fast parser may have read a value differently: parse again, slowly. */
const REPARSE = Symbol("reparse");

/**
 * Schema, then the rules a schema cannot say. Returns undefined when a value
 * is one the fast parser may have read differently from the `yaml` package
 * (only possible on the fast path): the caller then parses again, slowly.
 */
function checkData(
  data: unknown,
  where: Locator,
  path: string,
  opts: Pick<LoadOptions, "settings">,
):
  | {
      instructions: DesiredInstruction[];
      presentation?: Presentation;
      webhooks: DesiredWebhook[];
      errors: PricingProblem[];
    }
  | undefined {
  const errors: PricingProblem[] = [];
  const instructions: DesiredInstruction[] = [];
  const check: Check = { where, problem: (at, rule, message) => void errors.push({ ...pin(at), rule, message }) };

  // The file's outline first, then each instruction on its own, so one
  // malformed instruction does not hide the problems of the others.
  const file = checkFileOutline(data, check);
  let webhooks: DesiredWebhook[] = [];
  if (
    file.notifications !== undefined &&
    schemaProblems(checkNotifications, file.notifications, ["notifications"], where, check.problem)
  )
    webhooks = desiredWebhooks(file.notifications, path, (p, rule, message) =>
      check.problem(where.at(p), rule, message),
    );
  for (const [key, inst] of Object.entries(file.instructions ?? {})) {
    const base = ["instructions", key];
    if (!schemaProblems(checkInstruction, inst, base, where, check.problem)) continue;
    const before = errors.length;
    const inputs = requirementInputs(inst, file.defaults ?? {}, base, check, opts.settings);
    if (inputs === REPARSE) return undefined;
    // Requirement problems do not stop the checks below: every error is reported in one go.
    const normalized = errors.length > before ? undefined : normalizeCached(inputs, opts.settings);
    if (normalized && !normalized.ok) reportRequirementRules(normalized.errors, file, base, check);
    const cids = checkCids(inst, base, check);
    const files = checkFilePatterns(inst, base, check);
    const access = checkAccess(inst, base, check);
    if (errors.length > before || !normalized?.ok) continue;

    instructions.push({
      source: `file:${path}#${key}`,
      key,
      at: where.at(base, true),
      name: inst.name,
      description: inst.description ?? null,
      requirements: normalized.value,
      requirementsJson: JSON.stringify(normalized.value),
      access,
      access_scope: inst.access_scope ?? DEFAULT_ACCESS_SCOPE,
      cids,
      files,
    });
  }
  return { instructions, presentation: checkPresentation(file, check), webhooks, errors };
}

/** `site:` and `storefront:` (their shapes were checked with the outline); the logo must name a content file. */
function checkPresentation(file: PricingFile, check: Check): Presentation | undefined {
  if (!file.site && !file.storefront) return undefined;
  const logo = file.site?.logo;
  const problem = logo === undefined ? undefined : relativePathProblem(logo);
  if (problem) check.problem(check.where.at(["site", "logo"]), "format", `site.logo: ${problem}`);
  return {
    site: file.site && { ...file.site, at: check.where.at(["site"], true) },
    storefront: file.storefront && { ...file.storefront, at: check.where.at(["storefront"], true) },
  };
}

/** `defaults` and `instructions` with nothing else at the top; an empty file when the outline is wrong. */
function checkFileOutline(data: unknown, check: Check): PricingFile {
  const outlineOk = schemaProblems(checkOutline, data, [], check.where, check.problem);
  return (outlineOk ? data : {}) as PricingFile;
}

/**
 * Each requirement as the shared rules take it: network and pay_to from
 * here or from `defaults` (one of them must say), the amount from `price`
 * or `amount` (exactly one), the asset defaulting to the network's USDC.
 */
function requirementInputs(
  inst: Instruction,
  defaults: Defaults,
  base: Path,
  check: Check,
  settings: LoadOptions["settings"],
): RequirementInput[] | typeof REPARSE {
  const inputs: RequirementInput[] = [];
  for (const [i, req] of inst.payment_requirements.entries()) {
    const here = [...base, "payment_requirements", i];
    const label = here.join(".");
    const network = req.network ?? defaults.network;
    const payTo = req.pay_to ?? defaults.pay_to;
    if (network === undefined)
      check.problem(check.where.at(here), "required", `${label}: network is required (here or in defaults)`);
    if (payTo === undefined)
      check.problem(check.where.at(here), "required", `${label}: pay_to is required (here or in defaults)`);
    const amount = amountOf(req, here, check);
    if (amount === REPARSE) return REPARSE;
    const canonical = network === undefined ? undefined : canonicalNetwork(network);
    inputs.push({
      network,
      pay_to: payTo,
      amount,
      // Default to the network's USDC; an unknown network is reported by the shared rules below.
      asset: req.asset ?? (canonical ? usdcAddress(canonical, settings) : "0x0000000000000000000000000000000000000000"),
      description: req.description,
    });
  }
  return inputs;
}

/** The amount in the smallest unit, from `price` ("$0.05") or `amount`: exactly one of them. */
function amountOf(req: Requirement, here: Path, check: Check): string | undefined | typeof REPARSE {
  const label = here.join(".");
  if (req.price !== undefined && req.amount !== undefined) {
    check.problem(
      check.where.at([...here, "amount"], true),
      "price-or-amount",
      `${label}: give either price or amount, not both`,
    );
    return undefined;
  }
  if (req.price !== undefined) {
    const r = priceToAmount(req.price);
    if ("error" in r) check.problem(check.where.at([...here, "price"]), "price", `${label}.price: ${r.error}`);
    else return r.amount;
    return undefined;
  }
  if (req.amount !== undefined) {
    if (typeof req.amount === "number" && Number.isInteger(req.amount)) {
      // A YAML integer past 2^53 has lost digits in toJS: take the text as written.
      const written = check.where.integerSource([...here, "amount"]);
      if (written === undefined && !Number.isSafeInteger(req.amount)) return REPARSE;
      return written ?? String(req.amount);
    }
    return req.amount as string; // a fraction is refused by the shared rule below
  }
  check.problem(
    check.where.at(here),
    "price-or-amount",
    `${label}: give a price ("$0.05") or an amount in the smallest unit`,
  );
  return undefined;
}

/** The shared requirement rules' errors, each where the value is written (a default where `defaults` says it). */
function reportRequirementRules(fieldErrors: FieldError[], file: PricingFile, base: Path, check: Check): void {
  for (const fe of fieldErrors) {
    const segs = fe.path.split(".").map((x) => (/^\d+$/.test(x) ? Number(x) : x));
    const full = [...base, ...segs];
    // A value inherited from `defaults` is wrong where it is written.
    const field = segs[2];
    const inherited =
      (field === "network" || field === "pay_to") && file.defaults?.[field] !== undefined && !check.where.has(full);
    check.problem(
      check.where.at(inherited ? ["defaults", field] : full),
      "requirement",
      `${base.join(".")}.${fe.path}: ${fe.message}`,
    );
  }
}

/** `cids:` entries: each a CID (any spelling, stored canonical), repeats within the instruction dropped. */
function checkCids(inst: Instruction, base: Path, check: Check): CidClaim[] {
  const cids: CidClaim[] = [];
  const seenCids = new Set<string>();
  for (const [i, text] of (inst.cids ?? []).entries()) {
    const at = check.where.at([...base, "cids", i]);
    const cid = canonicalCid(text.trim());
    if (!cid) check.problem(at, "cid", `${base.join(".")}.cids.${i}: "${text}" is not a CID (v0 Qm... or v1)`);
    else if (!seenCids.has(cid)) {
      seenCids.add(cid);
      cids.push({ cid, at });
    }
  }
  return cids;
}

/** `access:` as the API takes it; a bare number (YAML reads `30` as one) is refused like any unit-less text. */
function checkAccess(inst: Instruction, base: Path, check: Check): string {
  if (inst.access === undefined) return DEFAULT_ACCESS;
  const text = String(inst.access);
  if (typeof inst.access !== "string" || !parseAccessPolicy(text)) {
    check.problem(
      check.where.at([...base, "access"]),
      "access",
      `${base.join(".")}.access: ${ACCESS_RULE} (got "${text}")`,
    );
  }
  return text;
}

/** `files:` entries: relative paths or globs that cannot leave the content folder nor name hidden files. */
function checkFilePatterns(inst: Instruction, base: Path, check: Check): FilePattern[] {
  const files: FilePattern[] = [];
  for (const [i, pattern] of (inst.files ?? []).entries()) {
    const at = check.where.at([...base, "files", i]);
    const clean = pattern.replace(/^\.\//, "");
    const why = relativePathProblem(clean);
    if (why) check.problem(at, "files", `${base.join(".")}.files.${i}: "${pattern}" ${why}`);
    else files.push({ pattern, glob: new Bun.Glob(clean), literal: /[*?[\]{}]/.test(clean) ? undefined : clean, at });
  }
  return files;
}

/**
 * normalizeRequirements is pure and most instructions share a few requirement
 * lists (same wallet, a handful of prices), so results are reused within and
 * across loads; checksumming addresses is the costly part.
 */
const normalizeCache = new Map<string, ReturnType<typeof normalizeRequirements>>();

function normalizeCached(inputs: unknown[], settings: LoadOptions["settings"]) {
  const key = `${settings.usdcAddressBase ?? ""}|${settings.usdcAddressBaseSepolia ?? ""}|${JSON.stringify(inputs)}`;
  let result = normalizeCache.get(key);
  if (!result) {
    if (normalizeCache.size >= 10_000) normalizeCache.clear();
    result = normalizeRequirements(inputs, settings, "payment_requirements");
    normalizeCache.set(key, result);
  }
  return result;
}

/**
 * Loads all pricing files and resolves `files:` entries against the content
 * index. The same CID in two instructions is an error naming both places.
 * API-made instructions are checked later, inside the reconcile transaction.
 */
export function loadPricing(opts: LoadOptions): LoadedPricing {
  const files = findPricingFiles(opts.configDir);
  const out: LoadedPricing = { files, instructions: [], presentation: {}, webhooks: [], errors: [], warnings: [] };
  const live = new Set<string>();
  for (const path of files) {
    let text: string;
    try {
      text = readFileSync(join(opts.configDir, path), "utf8");
    } catch (e) {
      // Deleted between listing and reading (an editor's rename): the next event reloads.
      if ((e as NodeJS.ErrnoException).code === "ENOENT") continue;
      out.errors.push({
        file: join(opts.configDir, path),
        line: 1,
        column: 1,
        rule: "read",
        message: (e as Error).message,
      });
      continue;
    }
    live.add(path);
    let parsed = opts.cache?.get(path);
    if (!parsed || parsed.text !== text || !sameEnv(parsed.env, opts.env)) {
      parsed = { text, env: envUsed(text, opts.env), parsed: parsePricingFile(path, text, opts) };
      opts.cache?.set(path, parsed);
    }
    out.instructions.push(...parsed.parsed.instructions);
    mergePresentation(out, parsed.parsed.presentation);
    out.webhooks.push(...parsed.parsed.webhooks);
    out.errors.push(...parsed.parsed.errors);
    out.warnings.push(...parsed.parsed.warnings);
  }
  if (opts.cache) for (const path of opts.cache.keys()) if (!live.has(path)) opts.cache.delete(path);

  // files: -> CIDs, then one owner per CID across everything.
  const byPath = new Map(opts.content.map((f) => [f.path, f.cid]));
  const owner = new Map<string, { inst: DesiredInstruction; claim: CidClaim }>();
  const resolved: DesiredInstruction[] = [];
  for (const inst of out.instructions) {
    const claims = [...inst.cids];
    for (const f of inst.files) {
      let matched = 0;
      if (f.literal !== undefined) {
        const cid = byPath.get(f.literal);
        if (cid) {
          matched++;
          claims.push({ cid, at: f.at, via: f.literal });
        }
      } else {
        for (const file of opts.content) {
          if (f.glob.match(file.path)) {
            matched++;
            claims.push({ cid: file.cid, at: f.at, via: file.path });
          }
        }
      }
      if (matched === 0) {
        out.warnings.push({
          ...pin(f.at),
          rule: "files",
          message: `"${f.pattern}" matches no file in the content folder (yet)`,
        });
      }
    }
    const mine = new Map<string, CidClaim>();
    for (const claim of claims) {
      if (mine.has(claim.cid)) continue; // one instruction naming a CID twice is harmless
      const other = owner.get(claim.cid);
      if (other) {
        out.errors.push({
          ...pin(claim.at),
          rule: "duplicate-cid",
          message: `CID ${claim.cid}${claim.via ? ` (${claim.via})` : ""} is declared twice: by ${describe(inst, claim)} and by ${describe(other.inst, other.claim)}`,
        });
        continue;
      }
      owner.set(claim.cid, { inst, claim });
      mine.set(claim.cid, claim);
    }
    resolved.push({ ...inst, cids: [...mine.values()] });
  }
  out.instructions = resolved;
  return out;
}

/** `site:` and `storefront:` may each be said by one file only: two would leave the reader guessing which wins. */
function mergePresentation(out: LoadedPricing, found: Presentation | undefined) {
  for (const key of ["site", "storefront"] as const) {
    const mine = found?.[key];
    if (!mine) continue;
    const other = out.presentation[key];
    if (other) {
      out.errors.push({
        ...pin(mine.at),
        rule: "duplicate-section",
        message: `${key}: is also given at ${other.at.file}:${other.at.line}:${other.at.column}; keep one`,
      });
    } else out.presentation = { ...out.presentation, [key]: mine };
  }
}

function describe(inst: Pick<DesiredInstruction, "key">, claim: CidClaim): string {
  return `"${inst.key}" at ${claim.at.file}:${claim.at.line}:${claim.at.column}${claim.via ? ` via ${claim.via}` : ""}`;
}
