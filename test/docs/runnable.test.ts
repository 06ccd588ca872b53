/**
 * The docs cannot drift: every shell example in README.md and docs/*.md
 * fenced as ```sh runnable is run, in order, one bash session per file (so a
 * block may use the TOKEN or API an earlier one set), against a real shop
 * started by `cidgate dev` (a local chain, the built-in facilitator, the
 * example pricing). The only rewrite is the origin: the shop listens on a
 * free port, so `http://127.0.0.1:4021` becomes it. `npx cidgate` runs this
 * checkout's CLI (a shim on PATH refuses any other npx package, so an
 * example can never fetch something from the registry). The working folder
 * is a fresh one holding the shop's data/dev/, as the reader's clone would.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");
const MAIN = join(ROOT, "src/cli/main.ts");
const DOCS = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];
const text = (file: string) => readFileSync(join(ROOT, file), "utf8");

/** The ```sh runnable blocks of a Markdown file, in order. */
function runnable(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh runnable\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/** Every shell block's text (for the spelling rules; unlabelled blocks are program output). */
function codeBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```(?:sh|bash|shell)\b[^\n]*\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

describe("one spelling", () => {
  test("the CLI is `npx cidgate` in every README and docs example", () => {
    for (const file of DOCS) {
      for (const wrong of ["bun run cidgate", "npm run cidgate", "bun run --silent cidgate", "npx bun run cidgate"])
        expect({ file, has: text(file).includes(wrong) }).toEqual({ file, has: false });
      for (const block of codeBlocks(text(file)))
        for (const line of block.split("\n").filter((l) => /^\s*(\$ )?cidgate /.test(l)))
          throw new Error(`${file}: "${line.trim()}" runs cidgate without npx`);
    }
  });

  test("one $API: every definition in the docs is the README's", () => {
    const definitions = DOCS.flatMap((file) =>
      codeBlocks(text(file)).flatMap((b) => b.split("\n").filter((l) => /^API=/.test(l))),
    );
    expect(definitions.length).toBeGreaterThanOrEqual(3);
    expect(new Set(definitions)).toEqual(new Set(["API=http://127.0.0.1:4021/v3/x402"]));
  });
});

describe("runnable examples", () => {
  let dir: string;
  let dev: Bun.Subprocess<"ignore", "pipe", "pipe"> | undefined;
  let origin = "";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cidgate-docs-"));
    mkdirSync(join(dir, "bin"));
    writeFileSync(
      join(dir, "bin", "npx"),
      `#!/bin/sh\nif [ "$1" = cidgate ]; then shift; exec "${process.execPath}" "${MAIN}" "$@"; fi\n` +
        `echo "runnable examples may only run npx cidgate (got npx $1)" >&2\nexit 127\n`,
    );
    chmodSync(join(dir, "bin", "npx"), 0o755);
    dev = Bun.spawn([process.execPath, MAIN, "dev", "--port", "0", "--dir", join(dir, "data", "dev")], {
      cwd: ROOT,
      stdin: "ignore",
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? dir, LOG_LEVEL: "warn" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const reader = dev.stdout.getReader();
    let out = "";
    while (!out.includes("Ctrl-C stops the shop")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`cidgate dev exited:\n${out}\n${await new Response(dev.stderr).text()}`);
      out += new TextDecoder().decode(value);
    }
    origin = out.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)![1];
    void (async () => {
      while (!(await reader.read()).done) {}
    })();
  }, 60_000);

  afterAll(async () => {
    dev?.kill("SIGTERM");
    await dev?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  function runFile(file: string) {
    const blocks = runnable(text(file));
    const script = ["set -euo pipefail", ...blocks].join("\n").replaceAll("http://127.0.0.1:4021", origin);
    const p = Bun.spawnSync(["bash", "-c", script], {
      cwd: dir,
      env: {
        PATH: `${join(dir, "bin")}:${process.env.PATH ?? ""}`,
        HOME: process.env.HOME ?? dir,
        // The shop's own state, so `token create` signs with its secret.
        CIDGATE_DB: "data/dev/cidgate.db",
        CIDGATE_CONFIG_DIR: join(ROOT, "config"),
        CIDGATE_CONTENT_DIR: join(ROOT, "content"),
      },
    });
    const result = { file, code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
    if (result.code !== 0) throw new Error(`${file}: exit ${result.code}\n${result.out}\n${result.err}`);
    return result;
  }

  test("there are runnable examples in the README, the API and the pricing docs", () => {
    expect(runnable(text("README.md")).length).toBeGreaterThanOrEqual(2);
    expect(runnable(text("docs/api.md")).length).toBeGreaterThanOrEqual(1);
    expect(runnable(text("docs/pricing.md")).length).toBeGreaterThanOrEqual(1);
  });

  test("README: the reader's own paid download, the sale in dollars, then the API", () => {
    const r = runFile("README.md");
    expect(r.err).toContain("price: $0.01 on base-sepolia");
    expect(r.err).toMatch(/paid: transaction 0x[0-9a-f]{64}/);
    expect(readFileSync(join(dir, "why-pay-per-file.md"), "utf8")).toBe(
      readFileSync(join(ROOT, "content/articles/why-pay-per-file.md"), "utf8"),
    );
    expect(r.out).toContain("total: 1 sale(s), $0.01");
    expect(r.out).toContain('"state":"settled"');
  }, 90_000);

  test("every other file's runnable examples exit 0", () => {
    for (const file of DOCS.filter((f) => f !== "README.md" && runnable(text(f)).length > 0)) runFile(file);
  }, 90_000);
});
