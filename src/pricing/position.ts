/**
 * Where a problem is: file, line, column. Positions found by the fast parser
 * are worked out only when something reads them (most never are).
 */

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

/** A problem as one line: `config/a.yaml:3:5: message [rule]`. */
export function formatProblem(p: PricingProblem): string {
  return `${p.file}:${p.line}:${p.column}: ${p.message} [${p.rule}]`;
}

export type Path = readonly (string | number)[];

/** Where things are in one file. Positions may be computed lazily (see fastParse). */
export interface Locator {
  at(path: Path, onKey?: boolean): Position;
  /** The text of an integer as written, when the parsed number may have lost digits. */
  integerSource(path: Path): string | undefined;
  /** Whether the file itself (not `defaults`) has a value at `path`. */
  has(path: Path): boolean;
}

/** A position whose line and column are worked out on first read: most positions are never read. */
class LazyPosition implements Position {
  #resolved: Position | undefined;
  constructor(
    readonly file: string,
    private readonly resolve: () => Position,
  ) {}
  get line() {
    return (this.#resolved ??= this.resolve()).line;
  }
  get column() {
    return (this.#resolved ??= this.resolve()).column;
  }
}

export function lazyPosition(file: string, resolve: () => Position): Position {
  return new LazyPosition(file, resolve);
}

/** A plain copy of a position (spreading a lazy one would lose its getters). */
export function pin(at: Position): Position {
  return { file: at.file, line: at.line, column: at.column };
}
