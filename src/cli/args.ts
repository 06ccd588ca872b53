/**
 * Option parsing for the `cidgate` commands, on node:util's parseArgs; the
 * command helper (command.ts) turns what it finds into one-line errors.
 * It runs non-strict and checks the tokens itself so that the messages are
 * ours: a string option takes the next argument whatever it looks like, a
 * missing value reads as "" (the helper refuses it by name), the first thing
 * undeclared, or a flag given a value, comes back as `unknown`, spelled as
 * typed, and the first option given twice as `repeated` (the last one never
 * silently wins).
 */
import { parseArgs } from "node:util";

export type OptionSpec = Record<string, "string" | "boolean">;

export type OptionValues<S extends OptionSpec> = { [K in keyof S]?: S[K] extends "string" ? string : boolean };

export interface ParsedArgs<S extends OptionSpec> {
  values: OptionValues<S>;
  positionals: string[];
  /** The first undeclared option (or flag given a value), as typed. */
  unknown?: string;
  /** The first declared option given more than once, as `--name`. */
  repeated?: string;
}

export function parseOptions<S extends OptionSpec>(args: string[], spec: S): ParsedArgs<S> {
  const options = Object.fromEntries(Object.entries(spec).map(([name, type]) => [name, { type }]));
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  const values: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  let unknown: string | undefined;
  let repeated: string | undefined;
  for (const token of tokens) {
    if (token.kind === "positional") positionals.push(token.value);
    if (token.kind !== "option") continue;
    const type = Object.hasOwn(spec, token.name) ? spec[token.name] : undefined;
    if (type === undefined || (type === "boolean" && token.value !== undefined)) unknown ??= args[token.index];
    else if (Object.hasOwn(values, token.name)) repeated ??= `--${token.name}`;
    else values[token.name] = type === "boolean" ? true : (token.value ?? "");
  }
  return { values: values as OptionValues<S>, positionals, unknown, repeated };
}
