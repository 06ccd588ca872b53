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
  /** The path itself when the entry has no glob characters: looked up, not matched against every file. */
  literal?: string;
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

type Path = readonly (string | number)[];

/** Where things are in one file. Positions may be computed lazily (see fastParse). */
interface Locator {
  at(path: Path, onKey?: boolean): Position;
  /** The text of an integer as written, when the parsed number may have lost digits. */
  integerSource(path: Path): string | undefined;
  /** Whether the file itself (not `defaults`) has a value at `path`. */
  has(path: Path): boolean;
}

/**
 * Offset of a path below `start`: the key itself when `onKey`, else the
 * value; the nearest existing ancestor when the path does not exist.
 */
function locate(start: unknown, path: Path, onKey = false): number {
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

/** Positions from a parsed document. Instructions are found through one index: a lookup by key in a map of thousands would make a load quadratic. */
function documentLocator(doc: Document, lines: LineCounter, display: string): Locator {
  let index: Map<string, { key: unknown; value: unknown }> | undefined;
  const instruction = (key: string) => {
    if (!index) {
      index = new Map();
      const node = isMap(doc.contents) ? doc.contents.get("instructions", true) : undefined;
      if (isMap(node)) for (const pair of node.items) if (isScalar(pair.key)) index.set(String(pair.key.value), pair);
    }
    return index.get(key);
  };
  const offsetOf = (path: Path, onKey: boolean) => {
    if (path[0] === "instructions" && path.length >= 2) {
      const pair = instruction(String(path[1]));
      if (pair) {
        const keyStart = (pair.key as Node).range?.[0] ?? 0;
        return path.length === 2 && onKey ? keyStart : path.length === 2 ? ((pair.value as Node | null)?.range?.[0] ?? keyStart) : locate(pair.value, path.slice(2), onKey);
      }
    }
    return locate(doc, path, onKey);
  };
  const nodeAt = (path: Path): unknown => {
    if (path[0] === "instructions" && path.length >= 2) {
      const pair = instruction(String(path[1]));
      if (!pair) return undefined;
      return path.length === 2 ? pair.value : isMap(pair.value) ? pair.value.getIn(path.slice(2), true) : undefined;
    }
    return doc.getIn(path, true);
  };
  return {
    at(path, onKey = false) {
      const { line, col } = lines.linePos(offsetOf(path, onKey));
      return { file: display, line, column: col };
    },
    integerSource(path) {
      const node = nodeAt(path);
      return isScalar(node) && typeof node.source === "string" && /^\d+$/.test(node.source) ? node.source : undefined;
    },
    has: (path) => nodeAt(path) !== undefined,
  };
}

/** A parse that keeps positions (the `yaml` package), or the problems that make the file unusable. */
function parseWithPositions(text: string, display: string, env: LoadOptions["env"]) {
  const lines = new LineCounter();
  const errors: PricingProblem[] = [];
  const warnings: PricingProblem[] = [];
  const pos = (offset: number): Position => {
    const { line, col } = lines.linePos(offset);
    return { file: display, line, column: col };
  };
  const problem = (offset: number, rule: string, message: string) => errors.push({ ...pos(offset), rule, message });

  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, merge: false });
  for (const e of doc.errors) {
    problem(e.pos[0], "yaml", e.code === "DUPLICATE_KEY" ? "a key appears twice in the same mapping" : e.message);
  }
  for (const w of doc.warnings) warnings.push({ ...pos(w.pos[0]), rule: "yaml", message: w.message });
  const locator = documentLocator(doc, lines, display);
  if (errors.length) return { doc, locator, data: undefined, errors, warnings };

  visit(doc, {
    Scalar(key, node) {
      // An unquoted 0x... address is a hex integer to YAML 1.2; as written, it is what the creator meant.
      if (typeof node.value === "number" && typeof node.source === "string" && /^0x[0-9a-fA-F]+$/.test(node.source)) {
        node.value = node.source;
      }
      // ${VAR} in values (never in keys), on the syntax tree so positions stay exact.
      if (key === "key" || typeof node.value !== "string" || !node.value.includes("${")) return;
      node.value = substitute(node.value, env, (message) => problem(node.range?.[0] ?? 0, "env", message));
    },
  });
  const data = errors.length ? undefined : (doc.toJS({ maxAliasCount: 100 }) ?? {});
  return { doc, locator, data, errors, warnings };
}

function substitute(value: string, env: LoadOptions["env"], fail: (message: string) => void): string {
  return value.replace(ENV_REF, (whole, escaped: string, name: string) => {
    if (escaped) return whole.slice(1); // "$${X}" is a literal "${X}"
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      fail(`"\${${name}}" is not a valid variable reference`);
      return whole;
    }
    const v = env[name];
    if (v === undefined || v === "") {
      fail(`environment variable ${name} is not set`);
      return whole;
    }
    return v;
  });
}

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
      integerSource: () => undefined,
      has: () => true,
    };
    const checked = checkData(fast, lazy, path, opts);
    if (checked && checked.errors.length === 0) return { path, instructions: checked.instructions, errors: [], warnings: [] };
  }
  const slow = parseWithPositions(text, display, opts.env);
  if (slow.data === undefined) return { path, instructions: [], errors: slow.errors, warnings: slow.warnings };
  const checked = checkData(slow.data, slow.locator, path, opts)!;
  return { path, instructions: checked.instructions, errors: checked.errors, warnings: slow.warnings };
}

/** A position whose line and column are worked out on first read (spreading it reads them). */
function lazyPosition(file: string, resolve: () => Position): Position {
  let done: Position | undefined;
  const get = () => (done ??= resolve());
  const p = { file } as Position;
  Object.defineProperty(p, "line", { enumerable: true, get: () => get().line });
  Object.defineProperty(p, "column", { enumerable: true, get: () => get().column });
  return p;
}

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
): { instructions: DesiredInstruction[]; errors: PricingProblem[] } | undefined {
  const errors: PricingProblem[] = [];
  const instructions: DesiredInstruction[] = [];
  const problem = (at: Position, rule: string, message: string) => errors.push({ ...at, rule, message });

  if (!checkFile.Check(data)) {
    const seen = new Set<string>();
    for (const e of checkFile.Errors(data)) {
      if (seen.has(e.path)) continue;
      seen.add(e.path);
      const segs = e.path.split("/").slice(1).map((x) => x.replaceAll("~1", "/").replaceAll("~0", "~"));
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
      }
      problem(where.at(segs, unknown), RULES[e.type] ?? "type", message);
    }
    return { instructions, errors };
  }
  const file = data as PricingFile;
  const defaults = file.defaults ?? {};

  for (const [key, inst] of Object.entries(file.instructions ?? {})) {
    if (!keyPattern.test(key)) continue; // reported by the schema
    const base = ["instructions", key];
    const before = errors.length;
    const requirementInputs = [];
    for (const [i, req] of inst.payment_requirements.entries()) {
      const here = [...base, "payment_requirements", i];
      const label = here.join(".");
      const network = req.network ?? defaults.network;
      const payTo = req.pay_to ?? defaults.pay_to;
      if (network === undefined) problem(where.at(here), "required", `${label}: network is required (here or in defaults)`);
      if (payTo === undefined) problem(where.at(here), "required", `${label}: pay_to is required (here or in defaults)`);
      let amount: string | undefined;
      if (req.price !== undefined && req.amount !== undefined) {
        problem(where.at([...here, "amount"], true), "price-or-amount", `${label}: give either price or amount, not both`);
      } else if (req.price !== undefined) {
        const r = priceToAmount(req.price);
        if ("error" in r) problem(where.at([...here, "price"]), "price", `${label}.price: ${r.error}`);
        else amount = r.amount;
      } else if (req.amount !== undefined) {
        if (typeof req.amount === "number") {
          // A YAML integer past 2^53 has lost digits in toJS: take the text as written.
          const written = where.integerSource([...here, "amount"]);
          if (written === undefined && !Number.isSafeInteger(req.amount)) return undefined;
          amount = written ?? String(req.amount);
        } else amount = req.amount;
      } else {
        problem(where.at(here), "price-or-amount", `${label}: give a price ("$0.05") or an amount in the smallest unit`);
      }
      const canonical = network === undefined ? undefined : canonicalNetwork(network);
      requirementInputs.push({
        network,
        pay_to: payTo,
        amount,
        // Default to the network's USDC; an unknown network is reported by the shared rules below.
        asset: req.asset ?? (canonical ? usdcAddress(canonical, opts.settings) : "0x0000000000000000000000000000000000000000"),
        description: req.description,
      });
    }
    if (errors.length > before) continue;

    const normalized = normalizeCached(requirementInputs, opts.settings);
    if (!normalized.ok) {
      for (const fe of normalized.errors) {
        const segs = fe.path.split(".").map((x) => (/^\d+$/.test(x) ? Number(x) : x));
        const full = [...base, ...segs];
        // A value inherited from `defaults` is wrong where it is written.
        const field = segs[2];
        const inherited =
          (field === "network" || field === "pay_to") && file.defaults?.[field] !== undefined && !where.has(full);
        problem(where.at(inherited ? ["defaults", field] : full), "requirement", `${base.join(".")}.${fe.path}: ${fe.message}`);
      }
      continue;
    }

    const cids: CidClaim[] = [];
    const seenCids = new Set<string>();
    (inst.cids ?? []).forEach((text, i) => {
      const at = where.at([...base, "cids", i]);
      const cid = canonicalCid(text.trim());
      if (!cid) return void problem(at, "cid", `${base.join(".")}.cids.${i}: "${text}" is not a CID (v0 Qm... or v1)`);
      if (!seenCids.has(cid)) {
        seenCids.add(cid);
        cids.push({ cid, at });
      }
    });
    const files: FilePattern[] = [];
    (inst.files ?? []).forEach((pattern, i) => {
      const at = where.at([...base, "files", i]);
      const clean = pattern.replace(/^\.\//, "");
      const why = relativePathProblem(clean);
      if (why) return void problem(at, "files", `${base.join(".")}.files.${i}: "${pattern}" ${why}`);
      files.push({ pattern, glob: new Bun.Glob(clean), literal: /[*?[\]{}]/.test(clean) ? undefined : clean, at });
    });
    if (errors.length > before) continue;

    instructions.push({
      source: `file:${path}#${key}`,
      key,
      at: where.at(base, true),
      name: inst.name,
      description: inst.description ?? null,
      requirements: normalized.value,
      cids,
      files,
    });
  }
  return { instructions, errors };
}

/**
 * Bun's YAML parser is an order of magnitude faster than the `yaml` package,
 * but keeps no positions and, unlike our strict parse, lets a repeated key
 * silently win. It is used only for plain block YAML that `plainBlockYaml`
 * vouches for (no duplicate keys, no anchors, tags, merges, flow mappings or
 * hex/octal literals), and only when `${VAR}` substitution succeeds.
 */
function fastParse(text: string, env: LoadOptions["env"]): unknown {
  const yaml = (Bun as unknown as { YAML?: { parse(t: string): unknown } }).YAML;
  if (!yaml || !plainBlockYaml(text)) return undefined;
  let data: unknown;
  try {
    data = yaml.parse(text);
  } catch {
    return undefined;
  }
  if (Array.isArray(data)) return undefined; // several documents: the slow path says why that is wrong
  let failed = false;
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return v.includes("${") ? substitute(v, env, () => void (failed = true)) : v;
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[k] = walk(x);
      return out;
    }
    return v;
  };
  const substituted = walk(data ?? {});
  return failed ? undefined : substituted;
}

/** Strips a trailing comment outside quotes. */
function withoutComment(s: string): string {
  let quote = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === quote) quote = "";
      else if (c === "\\" && quote === '"') i++;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "#" && (i === 0 || s[i - 1] === " ")) return s.slice(0, i).trimEnd();
  }
  return s.trimEnd();
}

const KEY_LINE = /^([A-Za-z0-9_][A-Za-z0-9_.\-/ ]*?|"[^"\\]*"|'[^']*'):(?:[ ]+(.*))?$/;

/**
 * True when `text` is block-style YAML simple enough that Bun's parser and
 * the `yaml` package must read it the same, with no key repeated within a
 * mapping. False means "not sure", never "invalid".
 */
export function plainBlockYaml(text: string): boolean {
  const stack: { indent: number; keys: Set<string> }[] = [];
  let blockScalarParent = -1;
  for (const raw of text.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line.includes("\t")) return false;
    const indent = line.length - line.trimStart().length;
    const trimmed = line.trim();
    if (blockScalarParent >= 0) {
      if (trimmed === "" || indent > blockScalarParent) continue;
      blockScalarParent = -1;
    }
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    if (indent === 0 && /^(---|\.\.\.|%)/.test(trimmed)) return false;

    let rest = withoutComment(line.slice(indent));
    let keyIndent = indent;
    let item = false;
    for (let m = /^-( +|$)/.exec(rest); m; m = /^-( +|$)/.exec(rest)) {
      if (m[1] === "") return false; // "-" alone: the item continues on the next lines
      keyIndent += 1 + m[1].length;
      rest = rest.slice(1 + m[1].length);
      item = true;
    }
    const m = KEY_LINE.exec(rest);
    const value = m ? (m[2] ?? "") : rest;
    if (/^[&*!]|^[-+]?0[xob]/i.test(value) || /[{}]|<</.test(value) || rest.startsWith("?")) return false;
    if (/^"/.test(value) && !/^"([^"\\]|\\.)*"$/.test(value)) return false; // a quoted scalar over several lines
    if (/^'/.test(value) && !/^'([^']|'')*'$/.test(value)) return false;
    if (/^\[/.test(value) && !/\]$/.test(value)) return false; // a flow sequence over several lines
    if (!m) {
      if (!item && stack.length === 0) return false;
      continue; // a sequence item's scalar, or a plain scalar's next line
    }
    if (/^[|>][-+0-9]*$/.test(value)) blockScalarParent = keyIndent;
    const key = m[1].startsWith('"') || m[1].startsWith("'") ? m[1].slice(1, -1) : m[1];
    while (stack.length && stack[stack.length - 1].indent > keyIndent) stack.pop();
    if (item) {
      while (stack.length && stack[stack.length - 1].indent >= keyIndent) stack.pop();
      stack.push({ indent: keyIndent, keys: new Set([key]) });
      continue;
    }
    const top = stack[stack.length - 1];
    if (top && top.indent === keyIndent) {
      if (top.keys.has(key)) return false;
      top.keys.add(key);
    } else stack.push({ indent: keyIndent, keys: new Set([key]) });
  }
  return true;
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
