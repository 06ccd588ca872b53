/**
 * The fast way to read a pricing file. Bun's YAML parser is an order of
 * magnitude faster than the `yaml` package but keeps no positions and lets a
 * repeated key silently win, so it is trusted only with plain block YAML that
 * plainBlockYaml vouches for; load.ts sends everything else, and every file
 * with any problem, to the `yaml` package, which decides and reports.
 */
import { substitute } from "./env";

/**
 * The file's data read by Bun's parser with `${VAR}` substituted, or
 * undefined when plainBlockYaml is not sure of the text, the parse fails,
 * or a variable is missing: the caller then takes the slow path.
 */
export function fastParse(text: string, env: Record<string, string | undefined>): unknown {
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
      for (const [k, x] of Object.entries(v)) {
        // Assigning "__proto__" would set the prototype, not a key: the slow path reports it as a key.
        if (k === "__proto__") failed = true;
        else out[k] = walk(x);
      }
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
    const bare = value.replace(/\$\{[A-Za-z0-9_]*\}/g, ""); // ${VAR} is ours, not a flow mapping
    if (/^[&*!]|^[-+]?0[xob]/i.test(value) || /[{}]|<</.test(bare) || rest.startsWith("?")) return false;
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
