/**
 * The real `cidgate` in its own process: top-level help, --version, unknown
 * commands, and the usage errors every command shares.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");
const MAIN = join(ROOT, "src/cli/main.ts");
const COMMANDS = [
  "serve",
  "token create",
  "config check",
  "content add",
  "content list",
  "facilitator",
  "devnet",
  "dev",
  "buy",
  "payments list",
  "payments resolve",
  "doctor",
  "backup",
  "restore",
  "db copy",
];
/** Groups are listed by their first word (`content`, `payments`, `token`). */
const LISTED = [
  "serve",
  "token",
  "config check",
  "content",
  "facilitator",
  "devnet",
  "dev",
  "buy",
  "payments",
  "doctor",
  "backup",
  "restore",
  "db",
];

function cidgate(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", CIDGATE_DB: ":memory:", ...env },
  });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

describe("cidgate", () => {
  test("no command, --help, -h and help print every command with its summary, exit 0", () => {
    const outs = [[], ["--help"], ["-h"], ["help"]].map((args) => {
      const r = cidgate(args);
      expect(r.code).toBe(0);
      expect(r.err).toBe("");
      return r.out;
    });
    for (const command of LISTED) expect(outs[0]).toMatch(new RegExp(`^  ${command}\\s+\\S`, "m"));
    expect(new Set(outs).size).toBe(1);
  }, 30_000); // four processes that each load every command: slow on a busy machine

  test("--version prints package.json's version", () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    expect(cidgate(["--version"])).toEqual({ code: 0, out: `${version}\n`, err: "" });
  });

  test("an unknown command or option: exit 2, one line naming it and pointing at --help", () => {
    expect(cidgate(["foo"])).toEqual({ code: 2, out: "", err: "cidgate: unknown command foo (see cidgate --help)\n" });
    expect(cidgate(["--foo"])).toEqual({
      code: 2,
      out: "",
      err: "cidgate: unknown option --foo (see cidgate --help)\n",
    });
  });

  test("`cidgate help <command>` is `cidgate <command> --help`", () => {
    const r = cidgate(["help", "token"]);
    expect(r.code).toBe(0);
    expect(r.out).toBe(cidgate(["token", "--help"]).out);
    expect(r.out).toContain("usage: cidgate token <create|list|revoke>");
  }, 15_000);

  test("every command has --help, and refuses an unknown option (facilitator included) in one line", () => {
    for (const command of COMMANDS) {
      const words = command.split(" ");
      const help = cidgate([...words, "--help"]);
      expect(help.code).toBe(0);
      expect(help.out).toStartWith(`cidgate ${command}: `);
      expect(help.out).toContain(`usage: cidgate ${command}`);

      const args = command === "content add" ? ["x"] : command === "buy" ? ["http://127.0.0.1:1/x"] : [];
      const bad = cidgate([...words, ...args, "--frobnicate"]);
      expect(bad.code).toBe(2);
      expect(bad.out).toBe("");
      expect(bad.err).toBe(`cidgate ${command}: unknown option --frobnicate (see cidgate ${command} --help)\n`);
    }
  }, 90_000); // two processes per command, each loading it: slow on a busy machine

  test("a repeated --scope is refused, never the last one silently", () => {
    const r = cidgate(["token", "create", "--scope", "read", "--scope", "write"], { JWT_SECRET: "x".repeat(40) });
    expect(r.code).toBe(2);
    expect(r.out).toBe("");
    expect(r.err).toBe("cidgate token create: --scope given twice; give it once (see cidgate token create --help)\n");
  });

  test("a bare --ttl number is refused with a message asking for a unit", () => {
    const r = cidgate(["token", "create", "--ttl", "30"], { JWT_SECRET: "x".repeat(40) });
    expect(r.code).toBe(2);
    expect(r.out).toBe("");
    expect(r.err.trim().split("\n")).toHaveLength(1);
    expect(r.err).toContain("--ttl needs a unit: s, m, h, d or w");
    expect(r.err).toContain('(got "30")');
  });

  test("bad settings: one line each, never the secret", () => {
    const r = cidgate(["token", "create"], { JWT_SECRET: "too-short-secret", LOG_LEVEL: "verbose" });
    expect(r.code).toBe(2);
    expect(r.out).toBe("");
    expect(r.err).toBe(
      "cidgate token create: bad setting JWT_SECRET: at least 32 characters\n" +
        'cidgate token create: bad setting LOG_LEVEL: one of fatal, error, warn, info, debug, trace, silent (got "verbose")\n',
    );
  });

  test("`cidgate serve` runs the server until SIGTERM; a bad setting stops it with one line", async () => {
    const bad = cidgate(["serve"], { PORT: "eighty" });
    expect(bad).toEqual({
      code: 2,
      out: "",
      err: 'cidgate: bad setting PORT: a whole number from 0 to 65535 (got "eighty")\n',
    });

    const dir = mkdtempSync(join(tmpdir(), "cidgate-serve-"));
    mkdirSync(join(dir, "config"));
    mkdirSync(join(dir, "content"));
    const p = Bun.spawn([process.execPath, MAIN, "serve"], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? "",
        CIDGATE_DB: ":memory:",
        PORT: "0",
        JWT_SECRET: "x".repeat(40),
        LOG_LEVEL: "warn",
      },
      stdout: "pipe",
      stderr: "pipe",
    });
    try {
      const reader = p.stdout.getReader();
      let text = "";
      let m: RegExpMatchArray | null;
      while (!(m = text.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/))) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`exited before listening: ${text}${await new Response(p.stderr).text()}`);
        text += new TextDecoder().decode(value);
      }
      reader.releaseLock();
      // An answer means start-up has finished, signal handlers included (they come after the
      // "listening" line, so a signal sent at once could still find the default handler).
      expect((await fetch(`${m[1]}/v3/x402/payments`)).status).toBe(401);
      p.kill("SIGTERM");
      expect(await p.exited).toBe(0);
    } finally {
      p.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  }, 20_000);
});
