import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkToken, tokenPlugin } from "../../src/http/token";

const verify = (token: string, secret: string) => checkToken(tokenPlugin(secret).decorator.jwt, token);

const MAIN = join(import.meta.dir, "../../src/cli/main.ts");

function cidgate(args: string[], env: Record<string, string>) {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { env: { PATH: process.env.PATH ?? "", ...env } });
  return { code: p.exitCode, out: p.stdout.toString().trim(), err: p.stderr.toString() };
}

describe("cidgate token create", () => {
  test("prints only a token on stdout, signed with the generated secret, with scopes and expiry", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cidgate-cli-"));
    try {
      const env = { CIDGATE_DB: join(dir, "cidgate.db") };
      // the expiry is what was asked, counted from when the command ran (a slow machine only widens the window)
      const seconds = () => Math.floor(Date.now() / 1000);
      let before = seconds();
      const r = cidgate(["token", "create", "--scope", "read", "--ttl", "2h"], env);
      let after = seconds();
      expect(r.code).toBe(0);
      expect(r.out.split(".")).toHaveLength(3);
      const { resolveJwtSecret } = require("../../src/http/jwt-secret");
      const secret = resolveJwtSecret({ jwtSecret: undefined, dataDir: dir });
      expect(statSync(join(dir, "jwt-secret")).mode & 0o777).toBe(0o600);
      const v = await verify(r.out, secret);
      expect(v?.scopes).toEqual(["read"]);
      expect(v!.claims.exp).toBeGreaterThanOrEqual(before + 2 * 3600);
      expect(v!.claims.exp).toBeLessThanOrEqual(after + 2 * 3600);
      // a second token uses the same secret
      before = seconds();
      const again = cidgate(["token", "create", "--scope=read,write", "--ttl=30d"], env);
      after = seconds();
      const w = await verify(again.out, secret);
      expect(w?.scopes).toEqual(["read", "write"]);
      expect(w!.claims.exp).toBeGreaterThanOrEqual(before + 30 * 86400);
      expect(w!.claims.exp).toBeLessThanOrEqual(after + 30 * 86400);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("JWT_SECRET is used when set", async () => {
    const secret = "an-explicit-secret-of-32-characters-or-more";
    const r = cidgate(["token", "create"], { JWT_SECRET: secret, CIDGATE_DB: ":memory:" });
    expect(r.code).toBe(0);
    expect(await verify(r.out, secret)).toBeDefined();
    expect(await verify(r.out, "another-secret-of-32-characters-or-more!")).toBeUndefined();
  });

  test("bad scope, bad ttl or unknown option exit 2 with a one-line reason and no token", () => {
    const env = { JWT_SECRET: "x".repeat(40) };
    for (const args of [
      ["token", "create", "--scope", "admin"],
      ["token", "create", "--ttl", "forever"],
      ["token", "create", "--ttl", "0"],
      ["token", "create", "--ttl", "30"], // a bare number: which unit?
      ["token", "create", "--scope", "read", "--scope", "write"],
      ["token", "create", "--sope", "read"],
      ["token", "mint"],
    ]) {
      const r = cidgate(args, env);
      expect(r.code).toBe(2);
      expect(r.out).toBe("");
      expect(r.err.length).toBeGreaterThan(0);
    }
  }, 30_000); // seven CLI processes on a shared machine
});
