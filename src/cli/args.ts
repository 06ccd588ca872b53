/**
 * Option parsing shared by the `cidgate` subcommands, on node:util's parseArgs.
 * It runs non-strict and checks the tokens itself so that each command keeps
 * its own messages: a string option takes the next argument whatever it looks
 * like, a missing value reads as "" (the command says what is wrong with it),
 * and the first thing undeclared, or a flag given a value, comes back as
 * `unknown`, spelled as typed, for the command's "unknown option" line.
 */
import { parseArgs } from "node:util";

export type OptionSpec = Record<string, "string" | "boolean">;

export type OptionValues<S extends OptionSpec> = { [K in keyof S]?: S[K] extends "string" ? string : boolean };

export interface ParsedArgs<S extends OptionSpec> {
  values: OptionValues<S>;
  positionals: string[];
  /** The first undeclared option (or flag given a value), as typed. */
  unknown?: string;
}

export function parseOptions<S extends OptionSpec>(args: string[], spec: S): ParsedArgs<S> {
  const options = Object.fromEntries(Object.entries(spec).map(([name, type]) => [name, { type }]));
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  const values: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  let unknown: string | undefined;
  for (const token of tokens) {
    if (token.kind === "positional") positionals.push(token.value);
    if (token.kind !== "option") continue;
    const type = spec[token.name];
    if (type === undefined || (type === "boolean" && token.value !== undefined)) unknown ??= args[token.index];
    else values[token.name] = type === "boolean" ? true : (token.value ?? "");
  }
  return { values: values as OptionValues<S>, positionals, unknown };
}
