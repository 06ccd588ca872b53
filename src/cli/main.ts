#!/usr/bin/env bun
/**
 * The `cidgate` command. Each subcommand lives in its own file under cli/.
 */
export {};

const commands: Record<string, () => Promise<{ run(args: string[]): Promise<number> }>> = {
  // The server runs until a signal; index.ts exits the process itself.
  serve: async () => ({
    run: async (args) => {
      if (args.length > 0) {
        console.error("usage: cidgate serve   (settings come from the environment and .env: see README)");
        return args.includes("--help") ? 0 : 2;
      }
      await import("../index");
      return new Promise<number>(() => {});
    },
  }),
  token: async () => import("./token"),
  config: async () => import("./config"),
  content: async () => import("./content"),
  facilitator: async () => import("./facilitator"),
  devnet: async () => import("./devnet"),
};

const [name, ...args] = process.argv.slice(2);
const load = name ? commands[name] : undefined;
if (!load) {
  console.error(`usage: cidgate <${Object.keys(commands).join("|")}> ...   (cidgate <command> --help for more)`);
  process.exit(name === undefined || name === "help" || name === "--help" ? 0 : 2);
}
process.exit(await (await load()).run(args));
