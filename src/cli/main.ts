#!/usr/bin/env bun
/**
 * The `cidgate` command. Each command lives in its own file under cli/ and is
 * defined with defineCommand (command.ts); only the one asked for is loaded,
 * so `cidgate token create` does not pay for the facilitator's imports.
 */
import pkg from "../../package.json";
import { type Command, table } from "./command";

const commands: Record<string, () => Promise<{ command: Command }>> = {
  serve: () => import("./serve"),
  token: () => import("./token"),
  config: () => import("./config"),
  content: () => import("./content"),
  entitlements: () => import("./entitlements"),
  payments: () => import("./payments"),
  facilitator: () => import("./facilitator"),
  devnet: () => import("./devnet"),
  dev: () => import("./dev"),
  buy: () => import("./buy"),
  doctor: () => import("./doctor"),
  backup: () => import("./backup"),
  restore: () => import("./restore"),
  db: () => import("./db"),
};

async function help(): Promise<string> {
  const loaded = await Promise.all(Object.values(commands).map(async (load) => (await load()).command));
  return [
    `cidgate ${pkg.version}: sell files over x402 (HTTP 402, USDC on Base)`,
    "usage: cidgate <command> [options]",
    `commands:\n${table(loaded.map((c) => [c.name, c.summary]))}`,
    `options:\n${table([
      ["-h, --help", "print this help"],
      ["--version", "print the version"],
    ])}`,
    "cidgate <command> --help prints a command's arguments and options.",
  ].join("\n\n");
}

async function main([name, ...args]: string[]): Promise<number> {
  if (name === undefined || name === "--help" || name === "-h" || (name === "help" && args.length === 0)) {
    console.log(await help());
    return 0;
  }
  if (name === "--version") {
    console.log(pkg.version);
    return 0;
  }
  // `cidgate help token` is `cidgate token --help`.
  const [command, rest] = name === "help" ? [args[0], ["--help"]] : [name, args];
  if (!Object.hasOwn(commands, command)) {
    console.error(`cidgate: unknown ${command.startsWith("-") ? "option" : "command"} ${command} (see cidgate --help)`);
    return 2;
  }
  return (await commands[command]()).command.main(rest);
}

process.exit(await main(process.argv.slice(2)));
