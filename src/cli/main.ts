#!/usr/bin/env bun
/**
 * The `cidgate` command. Each subcommand lives in its own file under cli/.
 */
export {};

const commands: Record<string, () => Promise<{ run(args: string[]): Promise<number> }>> = {
  serve: async () => ({ run: async () => (await import("../index"), new Promise<number>(() => {})) }),
  token: async () => import("./token"),
  config: async () => import("./config"),
  content: async () => import("./content"),
  facilitator: async () => import("./facilitator"),
  devnet: async () => import("./devnet"),
};

const [name, ...args] = process.argv.slice(2);
const load = name ? commands[name] : undefined;
if (!load) {
  console.error(`usage: cidgate <${Object.keys(commands).join("|")}> ...`);
  process.exit(name === undefined || name === "help" || name === "--help" ? 0 : 2);
}
process.exit(await (await load()).run(args));
