/**
 * The strict, slower reading of a pricing file with the `yaml` package:
 * every syntax problem and repeated key is an error, and every node keeps its
 * position, so each message can say file, line and column.
 */
import { type Document, isDocument, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument, visit } from "yaml";
import { substitute } from "./env";
import type { Locator, Path, Position, PricingProblem } from "./position";

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
        return path.length === 2 && onKey
          ? keyStart
          : path.length === 2
            ? ((pair.value as Node | null)?.range?.[0] ?? keyStart)
            : locate(pair.value, path.slice(2), onKey);
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
export function parseWithPositions(text: string, display: string, env: Record<string, string | undefined>) {
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
