/**
 * The one way to define a `cidgate` command. The helper owns what every
 * command would otherwise repeat: `--help`/`-h` (help on stdout, exit 0) and
 * usage errors (one line on stderr naming what is wrong, exit 2): an unknown
 * option, an option given twice or without its value, a missing or extra
 * argument, a wrong subcommand. A command's run() sees only well-formed input
 * and throws UsageError for a value it refuses.
 */
import { parseOptions } from "./args";

export interface OptionDef {
  type: "string" | "boolean";
  /** For help: what the value looks like, e.g. `<time>`. */
  value?: string;
  description: string;
}

export interface ArgumentDef {
  name: string;
  description: string;
  optional?: boolean;
}

type Values<O extends Record<string, OptionDef>> = {
  [K in keyof O]?: O[K]["type"] extends "string" ? string : boolean;
};

export interface CommandInput<O extends Record<string, OptionDef>> {
  values: Values<O>;
  /** The arguments, in the order declared (optional ones may be absent). */
  positionals: string[];
  /** `cidgate <name>`: the prefix of the command's own messages. */
  who: string;
}

export interface CommandDef<O extends Record<string, OptionDef>> {
  /** As typed after `cidgate`, subcommand included: "token create". */
  name: string;
  /** One line, for `cidgate --help`. */
  summary: string;
  arguments?: readonly ArgumentDef[];
  options?: O;
  /** Help lines after the options: settings read, examples. */
  notes?: string;
  run(input: CommandInput<O>): Promise<number>;
}

export interface Command {
  name: string;
  summary: string;
  help(): string;
  /** Runs with the arguments after the command's first word; resolves to the exit code. */
  main(args: string[]): Promise<number>;
}

/** A value the command refuses: reported as one line, exit 2. */
export class UsageError extends Error {}

export function defineCommand<const O extends Record<string, OptionDef> = Record<never, OptionDef>>(
  def: CommandDef<O>,
): Command {
  const [, ...subcommands] = def.name.split(" ");
  const who = `cidgate ${def.name}`;
  const options: Record<string, OptionDef> = def.options ?? {};
  const args = def.arguments ?? [];

  function help(): string {
    const argUsage = args.map((a) => (a.optional ? `[${a.name}]` : `<${a.name}>`));
    const optionRows: [string, string][] = Object.entries(options).map(([name, o]) => [
      `--${name}${o.type === "string" ? ` ${o.value ?? "<value>"}` : ""}`,
      o.description,
    ]);
    optionRows.push(["-h, --help", "print this help"]);
    const sections = [`${who}: ${def.summary}`, `usage: ${[who, ...argUsage, "[options]"].join(" ")}`];
    if (args.length > 0) sections.push(`arguments:\n${table(args.map((a) => [a.name, a.description]))}`);
    sections.push(`options:\n${table(optionRows)}`);
    if (def.notes) sections.push(def.notes);
    return sections.join("\n\n");
  }

  async function main(argv: string[]): Promise<number> {
    const refuse = (message: string) => {
      console.error(`${who}: ${message} (see ${who} --help)`);
      return 2;
    };
    const rest = [...argv];
    const wantsHelp = (a: string | undefined) => a === "--help" || a === "-h" || a === "help";
    for (const word of subcommands) {
      const given = rest.shift();
      if (given === word) continue;
      if (wantsHelp(given)) return printHelp();
      const group = who.slice(0, who.length - word.length - 1);
      console.error(
        given === undefined
          ? `${group}: missing subcommand: ${word} (see ${who} --help)`
          : `${group}: unknown subcommand ${given}; the only one is ${word} (see ${who} --help)`,
      );
      return 2;
    }
    const spec = Object.fromEntries(Object.entries(options).map(([n, o]) => [n, o.type]));
    const parsed = parseOptions(rest, { ...spec, help: "boolean", h: "boolean" });
    if (parsed.values.help || parsed.values.h) return printHelp();
    if (parsed.unknown !== undefined) return refuse(`unknown option ${parsed.unknown}`);
    if (parsed.repeated !== undefined) return refuse(`${parsed.repeated} given twice; give it once`);
    for (const [name, value] of Object.entries(parsed.values) as [string, string | boolean][]) {
      if (value === "") return refuse(`--${name} needs a value`);
    }
    const required = args.filter((a) => !a.optional).length;
    if (parsed.positionals.length > args.length)
      return refuse(`unexpected argument ${parsed.positionals[args.length]}`);
    if (parsed.positionals.length < required) return refuse(`missing <${args[parsed.positionals.length].name}>`);
    try {
      return await def.run({ values: parsed.values as Values<O>, positionals: parsed.positionals, who });
    } catch (e) {
      if (e instanceof UsageError) return refuse(e.message);
      throw e;
    }
  }

  function printHelp(): number {
    console.log(help());
    return 0;
  }

  return { name: def.name, summary: def.summary, help, main };
}

/** Two aligned columns, indented. */
export function table(rows: readonly (readonly [string, string])[]): string {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`).join("\n");
}

/**
 * A command with several subcommands (`cidgate entitlements list|grant|revoke`),
 * each defined with defineCommand under its full name. The group only picks
 * one by its second word; help and usage errors read like the others'.
 * `defaultSub` runs when no subcommand is given (`cidgate payments --csv` is
 * `cidgate payments list --csv`), so a group can grow from one command.
 */
export function defineGroup(name: string, summary: string, members: readonly Command[], defaultSub?: string): Command {
  const who = `cidgate ${name}`;
  const bySub = new Map(members.map((c) => [c.name.split(" ")[1], c]));
  const names = [...bySub.keys()];
  const choices = names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}`;

  function help(): string {
    return [
      `${who}: ${summary}`,
      `usage: ${who} ${defaultSub ? "[" : "<"}${names.join("|")}${defaultSub ? "]" : ">"} [options]`,
      `subcommands:\n${table(members.map((c) => [c.name.slice(name.length + 1), c.summary]))}`,
      `${who} <subcommand> --help prints its arguments and options.${defaultSub ? ` Without a subcommand: ${who} ${defaultSub}.` : ""}`,
    ].join("\n\n");
  }

  async function main(args: string[]): Promise<number> {
    const [sub] = args;
    if (sub === "--help" || sub === "-h" || sub === "help") {
      console.log(help());
      return 0;
    }
    if (defaultSub !== undefined && (sub === undefined || sub.startsWith("-")))
      return bySub.get(defaultSub)!.main([defaultSub, ...args]);
    const member = sub === undefined ? undefined : bySub.get(sub);
    if (!member) {
      console.error(
        sub === undefined
          ? `${who}: missing subcommand: ${choices} (see ${who} --help)`
          : sub.startsWith("-")
            ? `${who}: unknown option ${sub}; give a subcommand first: ${choices} (see ${who} --help)`
            : `${who}: unknown subcommand ${sub}; it is one of ${choices} (see ${who} --help)`,
      );
      return 2;
    }
    return member.main(args);
  }

  return { name, summary: `${summary} (${names.join(", ")})`, help, main };
}
