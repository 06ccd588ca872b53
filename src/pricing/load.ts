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
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { ValueErrorType } from "@sinclair/typebox/errors";
import { isDocument, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument, type Document, visit } from "yaml";
import { canonicalNetwork, usdcAddress } from "../chain/networks";
import { canonicalCid } from "../content/cid";
import { relativePathProblem } from "../content/paths";
import { normalizeRequirements, type StoredRequirement } from "../instructions/requirements";
import type { Settings } from "../settings";
import { priceToAmount } from "./price";
import { KEY_PATTERN, type PricingFile, PricingFileModel } from "./schema";

export interface Position {
  /** The file as the user knows it: the config folder joined with the file's path in it. */
  file: string;
  line: number;
  column: number;
}

export interface PricingProblem extends Position {
  /** Short name of the rule broken, e.g. "yaml", "required", "price", "env", "duplicate-cid". */
  rule: string;
  message: string;
}

export interface CidClaim {
  cid: string;
  at: Position;
  /** The content file a `files:` entry matched, when the CID came from one. */
  via?: string;
}

export interface FilePattern {
  pattern: string;
  glob: InstanceType<typeof Bun.Glob>;
  at: Position;
}

export interface DesiredInstruction {
  /** "file:<path relative to the config folder>#<key>": the identity kept across reloads. */
  source: string;
  key: string;
  at: Position;
  name: string;
  description: string | null;
  requirements: StoredRequirement[];
  cids: CidClaim[];
  files: FilePattern[];
}

export interface ParsedFile {
  /** Path relative to the config folder, "/"-separated. */
  path: string;
  instructions: DesiredInstruction[];
  errors: PricingProblem[];
  warnings: PricingProblem[];
}

export interface LoadedPricing {
  files: string[];
  instructions: DesiredInstruction[];
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

export type ParseCache = Map<string, { key: string; parsed: ParsedFile }>;

const checkFile = TypeCompiler.Compile(PricingFileModel);
const keyPattern = new RegExp(KEY_PATTERN);
const ENV_REF = /\$(\$?)\{([^}]*)\}/g;

/** Every *.yaml / *.yml under `configDir`, relative and sorted; hidden names are editors' and tools' own. */
export function findPricingFiles(configDir: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    let entries;
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

/** A problem as one line: `config/a.yaml:3:5: message [rule]`. */
export function formatProblem(p: PricingProblem): string {
  return `${p.file}:${p.line}:${p.column}: ${p.message} [${p.rule}]`;
}

const RULES: Partial<Record<ValueErrorType, string>> = {
  [ValueErrorType.ObjectRequiredProperty]: "required",
  [ValueErrorType.ObjectAdditionalProperties]: "unknown-field",
  [ValueErrorType.StringPattern]: "format",
  [ValueErrorType.StringMinLength]: "length",
  [ValueErrorType.StringMaxLength]: "length",
  [ValueErrorType.ArrayMinItems]: "count",
  [ValueErrorType.ArrayMaxItems]: "count",
};

/**
 * Offset of a path below `start` (the document's root by default): the key
 * itself when `onKey`, else the value; the nearest existing ancestor when the
 * path does not exist. Start from the instruction's own node: looking an
 * instruction up by key in a map of thousands would make a load quadratic.
 */
function locate(start: Document | unknown, path: readonly (string | number)[], onKey = false): number {
  let node: unknown = isDocument(start) ? start.contents : start;
  let offset = (node as Node | null)?.range?.[0] ?? 0;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(seg));
      if (!pair) return offset;
      const keyStart = (pair.key as Node).range?.[0] ?? offset;
      if (i === path.length - 1 && onKey) return keyStart;
      node = pair.value;
      offset = (node as Node | null)?.range?.[0] ?? keyStart;
    } else if (isSeq(node)) {
      const item = node.items[Number(seg)];
      if (item === undefined) return offset;
      node = item;
      offset = (item as Node | null)?.range?.[0] ?? offset;
    } else return offset;
  }
  return offset;
}


/** Parses and checks one file. Pure: the same text and environment give the same result. */
export function parsePricingFile(
  path: string,
  text: string,
  opts: Pick<LoadOptions, "configDir" | "settings" | "env">,
): ParsedFile {
  const display = join(opts.configDir, path);
  const lines = new LineCounter();
  const errors: PricingProblem[] = [];
  const warnings: PricingProblem[] = [];
  const result: ParsedFile = { path, instructions: [], errors, warnings };
  const at = (offset: number): Position => {
    const { line, col } = lines.linePos(offset);
    return { file: display, line, column: col };
  };
  const problem = (offset: number, rule: string, message: string) => errors.push({ ...at(offset), rule, message });

  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, merge: false });
  for (const e of doc.errors) {
    problem(e.pos[0], "yaml", e.code === "DUPLICATE_KEY" ? "a key appears twice in the same mapping" : e.message);
  }
  for (const w of doc.warnings) warnings.push({ ...at(w.pos[0]), rule: "yaml", message: w.message });
  if (errors.length) return result;

  // ${VAR} in values (never in keys), on the syntax tree so positions stay exact.
  if (text.includes("${")) visit(doc, {
    Scalar(key, node) {
      if (key === "key" || typeof node.value !== "string" || !node.value.includes("${")) return;
      node.value = node.value.replace(ENV_REF, (whole, escaped: string, name: string) => {
        if (escaped) return whole.slice(1); // "$${X}" is a literal "${X}"
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
          problem(node.range?.[0] ?? 0, "env", `"\${${name}}" is not a valid variable reference`);
          return whole;
        }
        const value = opts.env[name];
        if (value === undefined || value === "") {
          problem(node.range?.[0] ?? 0, "env", `environment variable ${name} is not set`);
          return whole;
        }
        return value;
      });
    },
  });
  if (errors.length) return result;

  const data = (doc.toJS({ maxAliasCount: 100 }) ?? {}) as PricingFile;
  if (!checkFile.Check(data)) {
    const seen = new Set<string>();
    for (const e of checkFile.Errors(data)) {
      if (seen.has(e.path)) continue;
      seen.add(e.path);
      const segs = e.path.split("/").slice(1).map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
      const unknown = e.type === ValueErrorType.ObjectAdditionalProperties;
      const field = segs[segs.length - 1];
      let message = `${segs.join(".") || "(file)"}: ${e.message.toLowerCase()}`;
      if (unknown && segs.length === 2 && segs[0] === "instructions") {
        message = `instruction key "${field}" may use only letters, digits, "_", "." and "-" (at most 100)`;
      } else if (unknown) message = `${segs.join(".")}: unknown field "${field}"`;
      else if (e.type === ValueErrorType.ObjectRequiredProperty) message = `${segs.join(".")}: is required`;
      else if (e.type === ValueErrorType.StringPattern && (field === "pay_to" || field === "asset")) {
        message = `${segs.join(".")}: must be a 0x-prefixed 20-byte hex address`;
      } else if (field === "network" && e.type === ValueErrorType.Union) {
        message = `${segs.join(".")}: must be one of base, base-sepolia, eip155:8453, eip155:84532`;
      } else if (e.type === ValueErrorType.StringPattern && field === "price") {
        message = `${segs.join(".")}: write a price with a leading "$", e.g. "$0.05"`;
      }
      problem(locate(doc, segs, unknown), RULES[e.type] ?? "type", message);
    }
    return result;
  }

  const defaults = data.defaults ?? {};
  const instructionsNode = (doc.contents as unknown as { get?: (k: string, keep: true) => unknown })?.get?.("instructions", true);
  const nodes = new Map<string, { key: unknown; value: unknown }>();
  if (isMap(instructionsNode)) for (const pair of instructionsNode.items) if (isScalar(pair.key)) nodes.set(String(pair.key.value), pair);

  for (const [key, inst] of Object.entries(data.instructions ?? {})) {
    if (!keyPattern.test(key)) continue; // reported above by the schema
    const base = ["instructions", key];
    const pair = nodes.get(key);
    const node = pair?.value;
    const keyOffset = (pair?.key as Node | undefined)?.range?.[0] ?? 0;
    /** Offset of a path inside this instruction. */
    const loc = (rel: readonly (string | number)[], onKey = false) => (rel.length === 0 ? keyOffset : locate(node, rel, onKey));
    const before = errors.length;
    const requirementInputs = inst.payment_requirements.map((req, i) => {
      const rel = ["payment_requirements", i];
      const here = [...base, ...rel];
      const network = req.network ?? defaults.network;
      const payTo = req.pay_to ?? defaults.pay_to;
      if (network === undefined) problem(loc(rel), "required", `${here.join(".")}: network is required (here or in defaults)`);
      if (payTo === undefined) problem(loc(rel), "required", `${here.join(".")}: pay_to is required (here or in defaults)`);
      let amount: string | undefined;
      if (req.price !== undefined && req.amount !== undefined) {
        problem(loc([...rel, "amount"], true), "price-or-amount", `${here.join(".")}: give either price or amount, not both`);
      } else if (req.price !== undefined) {
        const r = priceToAmount(req.price);
        if ("error" in r) problem(loc([...rel, "price"]), "price", `${here.join(".")}.price: ${r.error}`);
        else amount = r.amount;
      } else if (req.amount !== undefined) {
        // A YAML integer past 2^53 has lost digits in toJS: take the text as written.
        const amountNode = isMap(node) ? (node.getIn([...rel, "amount"], true) as unknown) : undefined;
        amount =
          isScalar(amountNode) && typeof amountNode.source === "string" && /^\d+$/.test(amountNode.source)
            ? amountNode.source
            : String(req.amount);
      } else {
        problem(loc(rel), "price-or-amount", `${here.join(".")}: give a price ("$0.05") or an amount in the smallest unit`);
      }
      const canonical = network === undefined ? undefined : canonicalNetwork(network);
      return {
        network,
        pay_to: payTo,
        amount,
        // Default to the network's USDC; an unknown network is reported by the shared rules below.
        asset: req.asset ?? (canonical ? usdcAddress(canonical, opts.settings) : "0x0000000000000000000000000000000000000000"),
        description: req.description,
      };
    });
    if (errors.length > before) continue;

    const normalized = normalizeCached(requirementInputs, opts.settings);
    if (!normalized.ok) {
      for (const fe of normalized.errors) {
        const segs = fe.path.split(".").map((s) => (/^\d+$/.test(s) ? Number(s) : s));
        // A value inherited from `defaults` is wrong where it is written.
        const field = segs[2];
        const inherited =
          typeof field === "string" &&
          (field === "network" || field === "pay_to") &&
          !(isMap(node) && node.hasIn(segs)) &&
          doc.hasIn(["defaults", field]);
        problem(inherited ? locate(doc, ["defaults", field]) : loc(segs), "requirement", `${base.join(".")}.${fe.path}: ${fe.message}`);
      }
      continue;
    }

    const cids: CidClaim[] = [];
    const seenCids = new Set<string>();
    (inst.cids ?? []).forEach((text, i) => {
      const offset = loc(["cids", i]);
      const cid = canonicalCid(text.trim());
      if (!cid) return void problem(offset, "cid", `${base.join(".")}.cids.${i}: "${text}" is not a CID (v0 Qm... or v1)`);
      if (!seenCids.has(cid)) {
        seenCids.add(cid);
        cids.push({ cid, at: at(offset) });
      }
    });
    const files: FilePattern[] = [];
    (inst.files ?? []).forEach((pattern, i) => {
      const offset = loc(["files", i]);
      const why = relativePathProblem(pattern.replace(/^\.\//, ""));
      if (why) return void problem(offset, "files", `${base.join(".")}.files.${i}: "${pattern}" ${why}`);
      files.push({ pattern, glob: new Bun.Glob(pattern.replace(/^\.\//, "")), at: at(offset) });
    });
    if (errors.length > before) continue;

    result.instructions.push({
      source: `file:${path}#${key}`,
      key,
      at: at(keyOffset),
      name: inst.name,
      description: inst.description ?? null,
      requirements: normalized.value,
      cids,
      files,
    });
  }
  return result;
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

/** Names of the environment variables a text refers to, with their values: part of the cache key. */
function envKey(text: string, env: LoadOptions["env"]): string {
  const names = new Set<string>();
  for (const m of text.matchAll(ENV_REF)) if (!m[1]) names.add(m[2]);
  return [...names].map((n) => `${n}=${env[n] ?? ""}`).join("\0");
}

/**
 * Loads all pricing files and resolves `files:` entries against the content
 * index. The same CID in two instructions is an error naming both places.
 * API-made instructions are checked later, inside the reconcile transaction.
 */
export function loadPricing(opts: LoadOptions): LoadedPricing {
  const files = findPricingFiles(opts.configDir);
  const out: LoadedPricing = { files, instructions: [], errors: [], warnings: [] };
  const live = new Set<string>();
  for (const path of files) {
    let text: string;
    try {
      text = readFileSync(join(opts.configDir, path), "utf8");
    } catch (e) {
      // Deleted between listing and reading (an editor's rename): the next event reloads.
      if ((e as NodeJS.ErrnoException).code === "ENOENT") continue;
      out.errors.push({ file: join(opts.configDir, path), line: 1, column: 1, rule: "read", message: (e as Error).message });
      continue;
    }
    live.add(path);
    const key = `${text}\u0001${envKey(text, opts.env)}`;
    let parsed = opts.cache?.get(path);
    if (!parsed || parsed.key !== key) {
      parsed = { key, parsed: parsePricingFile(path, text, opts) };
      opts.cache?.set(path, parsed);
    }
    out.instructions.push(...parsed.parsed.instructions);
    out.errors.push(...parsed.parsed.errors);
    out.warnings.push(...parsed.parsed.warnings);
  }
  if (opts.cache) for (const path of opts.cache.keys()) if (!live.has(path)) opts.cache.delete(path);

  // files: -> CIDs, then one owner per CID across everything.
  const owner = new Map<string, { inst: DesiredInstruction; claim: CidClaim }>();
  const resolved: DesiredInstruction[] = [];
  for (const inst of out.instructions) {
    const claims = [...inst.cids];
    for (const f of inst.files) {
      let matched = 0;
      for (const file of opts.content) {
        if (f.glob.match(file.path)) {
          matched++;
          claims.push({ cid: file.cid, at: f.at, via: file.path });
        }
      }
      if (matched === 0) {
        out.warnings.push({ ...f.at, rule: "files", message: `"${f.pattern}" matches no file in the content folder (yet)` });
      }
    }
    const mine = new Map<string, CidClaim>();
    for (const claim of claims) {
      if (mine.has(claim.cid)) continue; // one instruction naming a CID twice is harmless
      const other = owner.get(claim.cid);
      if (other) {
        out.errors.push({
          ...claim.at,
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

export function describe(inst: Pick<DesiredInstruction, "key">, claim: CidClaim): string {
  return `"${inst.key}" at ${claim.at.file}:${claim.at.line}:${claim.at.column}${claim.via ? ` via ${claim.via}` : ""}`;
}
