/**
 * The commands' own code run in this process (test/cli/main.test.ts runs the
 * real `cidgate` as a process, which coverage cannot see): what a creator
 * types, what it prints, its exit code, and what it changed.
 */
import { afterEach, beforeEach, describe, expect, spyOn, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { command as configCheck } from "../../src/cli/config";
import { command as contentAdd } from "../../src/cli/content";
import { command as tokenCreate } from "../../src/cli/token";
import { cidOfBytes } from "../../src/content/cid";
import { checkToken, tokenPlugin } from "../../src/http/token";
import { instruction, pricingFile } from "../pricing/helpers";

const SECRET = "in-process-secret-in-process-secret-0001";
let dir: string;
let out: string[];
let err: string[];
const saved: Record<string, string | undefined> = {};
const ENV = { JWT_SECRET: SECRET, CIDGATE_CONTENT_DIR: "", CIDGATE_CONFIG_DIR: "", CIDGATE_DB: "" };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cidgate-cli-"));
  out = [];
  err = [];
  spyOn(console, "log").mockImplementation((...a: unknown[]) => void out.push(a.join(" ")));
  spyOn(console, "error").mockImplementation((...a: unknown[]) => void err.push(a.join(" ")));
  const env = {
    ...ENV,
    CIDGATE_CONTENT_DIR: join(dir, "content"),
    CIDGATE_CONFIG_DIR: join(dir, "config"),
    CIDGATE_DB: join(dir, "db.sqlite"),
  };
  for (const [k, v] of Object.entries(env)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
});
afterEach(() => {
  (console.log as unknown as { mockRestore(): void }).mockRestore();
  (console.error as unknown as { mockRestore(): void }).mockRestore();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("cidgate token create", () => {
  test("prints only the token on stdout: signed with JWT_SECRET, the scopes and the lifetime asked", async () => {
    const before = Math.floor(Date.now() / 1000);
    expect(await tokenCreate.main(["create", "--scope", "read", "--ttl", "2h"])).toBe(0);
    expect(out).toHaveLength(1);
    const checked = await checkToken(tokenPlugin(SECRET).decorator.jwt, out[0]);
    expect(checked?.scopes).toEqual(["read"]);
    expect(checked!.claims.exp).toBeGreaterThanOrEqual(before + 7200);
    expect(checked!.claims.exp).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 7200);
  });

  test("a bare --ttl is refused in one line, exit 2, nothing printed on stdout", async () => {
    expect(await tokenCreate.main(["create", "--scope", "read", "--ttl", "30"])).toBe(2);
    expect(out).toEqual([]);
    expect(err).toHaveLength(1);
    expect(err[0]).toContain("--ttl");
  });
});

describe("cidgate config check", () => {
  test("a valid folder: exit 0 and a summary; a broken one: exit 1 with file, line and column", async () => {
    const config = join(dir, "config");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(config, { recursive: true });
    writeFileSync(
      join(config, "shop.yaml"),
      pricingFile(instruction("one", { cids: ["bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"] })),
    );
    expect(await configCheck.main(["check"])).toBe(0);
    expect(out.join("\n")).toContain("OK");
    writeFileSync(join(config, "shop.yaml"), pricingFile(instruction("one", { cids: ["not-a-cid"] })));
    out = [];
    expect(await configCheck.main(["check", config])).toBe(1);
    expect(err.join("\n")).toMatch(/shop\.yaml:\d+:\d+/);
    expect(err.join("\n")).toContain("not-a-cid");
  });
});

describe("cidgate content add", () => {
  test("copies the file into the content folder and prints its CID", async () => {
    const source = join(dir, "essay.md");
    writeFileSync(source, "# An essay\n");
    expect(await contentAdd.main(["add", source, "--as", "articles/essay.md"])).toBe(0);
    const cid = (await cidOfBytes(new TextEncoder().encode("# An essay\n"))).toString();
    expect(out).toEqual([cid]);
    const copied = join(dir, "content", "articles", "essay.md");
    expect(existsSync(copied)).toBe(true);
    expect(readFileSync(copied, "utf8")).toBe("# An essay\n");
  });

  test("a path that leaves the content folder is refused, and nothing is written", async () => {
    const source = join(dir, "essay.md");
    writeFileSync(source, "x");
    expect(await contentAdd.main(["add", source, "--as", "../outside.md"])).toBe(2);
    expect(err).toHaveLength(1);
    expect(err[0]).toContain("../outside.md");
    expect(out).toEqual([]);
    expect(existsSync(join(dir, "outside.md"))).toBe(false);
  });
});
