/**
 * Start-up, `doctor`, and the commands' settings with CIDGATE_DB=postgres://...:
 * every replica must sign and verify tokens with one secret, so start-up
 * refuses to generate one (JWT_SECRET is required); doctor reports the engine,
 * whether PostgreSQL answers and how far it is migrated; backup and restore
 * point at pg_dump; no output carries the password.
 */
import { afterEach, beforeEach, describe, expect, spyOn, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backup, restore } from "../../src/cli/backup";
import { command as token } from "../../src/cli/token";
import { openPg } from "../../src/db/pg";
import { decide } from "../../src/doctor/checks";
import { postgresFacts } from "../../src/doctor/probe";
import { resolveJwtSecret } from "../../src/http/jwt-secret";
import { loadSettings } from "../../src/settings";
import { createTestDatabase, pgAvailable } from "../support/postgres";

const ROOT = join(import.meta.dir, "../..");
const INDEX = join(ROOT, "src/index.ts");
const MAIN = join(ROOT, "src/cli/main.ts");
const PASSWORD = "pw-that-must-not-show-0123";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cidgate-pgstart-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The URL as an operator writes it: with a user and a password (the test server trusts loopback, any password logs in). */
function withPassword(url: string): string {
  const u = new URL(url);
  u.password = PASSWORD;
  return u.toString();
}

/** A shop with nothing to sell, its folders in `dir`, on `db`; the facilitator answers nobody (a warning, nothing is priced). */
function shopEnv(db: string, extra: Record<string, string> = {}): Record<string, string> {
  mkdirSync(join(dir, "config"), { recursive: true });
  mkdirSync(join(dir, "content"), { recursive: true });
  return {
    PATH: process.env.PATH ?? "",
    HOME: dir,
    CIDGATE_DB: db,
    CIDGATE_CONFIG_DIR: join(dir, "config"),
    CIDGATE_CONTENT_DIR: join(dir, "content"),
    FACILITATOR_URL: "http://127.0.0.1:1",
    FACILITATOR_TIMEOUT_MS: "1000",
    PORT: "0",
    LOG_LEVEL: "warn",
    ...extra,
  };
}

describe("settings with a postgres:// CIDGATE_DB", () => {
  test("the data folder defaults to data/ (not a folder named after the URL); the content index to data/content.db", () => {
    const s = loadSettings({ CIDGATE_DB: "postgres://cidgate:secret@db.internal:5432/shop" });
    expect(s.dataDir).toBe("data");
    expect(s.contentIndexDb).toBe("data/content.db");
    expect(loadSettings({ CIDGATE_DB: "/srv/shop/cidgate.db" }).dataDir).toBe("/srv/shop");
  });

  test("no secret is generated: resolveJwtSecret refuses in one line naming JWT_SECRET, and writes nothing", () => {
    const settings = { jwtSecret: undefined, dataDir: join(dir, "data"), db: "postgresql://h/shop" };
    expect(() => resolveJwtSecret(settings)).toThrow(
      "CIDGATE_DB is PostgreSQL and JWT_SECRET is unset: set JWT_SECRET (32+ characters, the same on every replica)",
    );
    expect(existsSync(join(dir, "data"))).toBe(false);
    expect(resolveJwtSecret({ ...settings, jwtSecret: "s".repeat(40) })).toBe("s".repeat(40));
    // SQLite keeps its generated secret.
    expect(resolveJwtSecret({ ...settings, db: join(dir, "x.db") })).toHaveLength(64);
  });

  test("the checks: JWT secret fails on PostgreSQL without JWT_SECRET, passes with it, is absent on SQLite", () => {
    const facts = (env: Record<string, string>) => ({
      settings: loadSettings(env),
      publicUrlGiven: false,
      pricedNetworks: [],
      supported: { value: [] },
      usdc: [],
      files: [],
      rpcs: [],
      served: {},
      postgres: { value: { applied: 4, known: 4 } },
    });
    const named = (env: Record<string, string>, name: string) => decide(facts(env)).find((r) => r.name === name);
    const pg = { CIDGATE_DB: `postgres://u:${PASSWORD}@db.internal/shop` };
    expect(named(pg, "JWT secret")?.status).toBe("fail");
    expect(named({ ...pg, JWT_SECRET: "j".repeat(40) }, "JWT secret")?.status).toBe("ok");
    expect(named({ CIDGATE_DB: ":memory:" }, "JWT secret")).toBeUndefined();
    expect(named(pg, "database")).toEqual({
      name: "database",
      status: "ok",
      message: "PostgreSQL postgres://…@db.internal/shop answers, migrated (4 migrations)",
    });
    expect(named({ CIDGATE_DB: ":memory:" }, "database")).toEqual({
      name: "database",
      status: "ok",
      message: "SQLite :memory:",
    });
    const newer = { ...facts(pg), postgres: { value: { applied: 5, known: 4 } } };
    expect(decide(newer).find((r) => r.name === "database")?.status).toBe("warn");
    const down = { ...facts(pg), postgres: { error: "Connection refused" } };
    expect(decide(down).find((r) => r.name === "database")).toEqual({
      name: "database",
      status: "fail",
      message: "PostgreSQL postgres://…@db.internal/shop does not answer: Connection refused",
    });
  });

  test("token create and revoke without JWT_SECRET: refused in one line before the database is opened", async () => {
    const err: string[] = [];
    const out: string[] = [];
    const spyErr = spyOn(console, "error").mockImplementation((...a: unknown[]) => void err.push(a.join(" ")));
    const spyOut = spyOn(console, "log").mockImplementation((...a: unknown[]) => void out.push(a.join(" ")));
    const saved = { db: process.env.CIDGATE_DB, secret: process.env.JWT_SECRET, data: process.env.CIDGATE_DATA_DIR };
    process.env.CIDGATE_DB = `postgres://u:${PASSWORD}@127.0.0.1:1/shop`; // nobody listens: never reached
    process.env.CIDGATE_DATA_DIR = join(dir, "data");
    delete process.env.JWT_SECRET;
    try {
      expect(await token.main(["create", "--scope", "read"])).toBe(2);
      expect(await token.main(["revoke", "tok-1"])).toBe(2);
    } finally {
      spyErr.mockRestore();
      spyOut.mockRestore();
      for (const [k, v] of [
        ["CIDGATE_DB", saved.db],
        ["JWT_SECRET", saved.secret],
        ["CIDGATE_DATA_DIR", saved.data],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    expect(out).toEqual([]);
    expect(err).toHaveLength(2);
    expect(err[0]).toStartWith(
      "cidgate token create: CIDGATE_DB is PostgreSQL and JWT_SECRET is unset: set JWT_SECRET",
    );
    expect(err[1]).toStartWith("cidgate token revoke: CIDGATE_DB is PostgreSQL and JWT_SECRET is unset");
    expect(readdirSync(dir)).toEqual([]);
  });

  test("backup and restore point at pg_dump / pg_restore in one line, exit 1", async () => {
    const err: string[] = [];
    const spy = spyOn(console, "error").mockImplementation((...a: unknown[]) => void err.push(a.join(" ")));
    const saved = process.env.CIDGATE_DB;
    process.env.CIDGATE_DB = `postgres://u:${PASSWORD}@127.0.0.1:1/shop`;
    try {
      expect(await backup.main([join(dir, "b.db")])).toBe(1);
      expect(await restore.main([join(dir, "b.db")])).toBe(1);
    } finally {
      spy.mockRestore();
      if (saved === undefined) delete process.env.CIDGATE_DB;
      else process.env.CIDGATE_DB = saved;
    }
    expect(err).toEqual([
      "cidgate backup: CIDGATE_DB is PostgreSQL; use pg_dump -Fc instead (docs/scaling.md#backups)",
      "cidgate restore: CIDGATE_DB is PostgreSQL; use pg_restore instead (docs/scaling.md#backups)",
    ]);
    expect(readdirSync(dir)).toEqual([]);
  });
});

const available = await pgAvailable("start-up on PostgreSQL");

describe.skipIf(!available)("on a real PostgreSQL", () => {
  test("start-up without JWT_SECRET: refused before listening, the fix in one line, no secret file, no password", async () => {
    const url = withPassword(await createTestDatabase());
    const p = Bun.spawn([process.execPath, INDEX], { cwd: dir, env: shopEnv(url), stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([
      new Response(p.stdout).text(),
      new Response(p.stderr).text(),
      p.exited,
    ]);
    expect(code).toBe(2);
    expect(out).not.toContain("listening");
    const refusals = err.split("\n").filter((l) => l.includes("refusing to start"));
    expect(refusals).toEqual([
      "cidgate: refusing to start: JWT secret: CIDGATE_DB is PostgreSQL and JWT_SECRET is unset: set JWT_SECRET " +
        "(32+ characters, the same on every replica); a secret generated here would be this replica's alone, " +
        "and the others would refuse its tokens",
    ]);
    expect(existsSync(join(dir, "data", "jwt-secret"))).toBe(false);
    expect(out + err).not.toContain(PASSWORD);
  }, 60_000);

  test("postgresFacts: a fresh database has nothing applied; once opened, every migration; a refused login names no password", async () => {
    const url = withPassword(await createTestDatabase());
    const fresh = await postgresFacts(url, 5000);
    expect("value" in fresh && fresh.value.applied).toBe(0);
    const known = "value" in fresh ? fresh.value.known : 0;
    expect(known).toBeGreaterThan(0);
    const pg = await openPg(url);
    await pg.close();
    expect(await postgresFacts(url, 5000)).toEqual({ value: { applied: known, known } });

    const wrong = new URL(url);
    wrong.username = "no_such_role";
    const refused = await postgresFacts(wrong.toString(), 5000);
    expect("error" in refused && refused.error).toContain("no_such_role");
    expect(JSON.stringify(refused)).not.toContain(PASSWORD);
  }, 60_000);

  test("doctor: the engine and its state in the checks, CIDGATE_DB shown without its password", async () => {
    const url = withPassword(await createTestDatabase());
    const pg = await openPg(url);
    await pg.close();
    const p = Bun.spawn([process.execPath, MAIN, "doctor"], {
      cwd: dir,
      env: shopEnv(url, { JWT_SECRET: "d".repeat(40) }),
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    const host = new URL(url).host;
    const db = new URL(url).pathname;
    expect(out).toMatch(new RegExp(`^\\s+CIDGATE_DB\\s+postgres://…@${host}${db}\\s*$`, "m"));
    expect(out).toMatch(
      new RegExp(
        `^\\s+ok\\s+database\\s+PostgreSQL postgres://…@${host}${db} answers, migrated \\(\\d+ migrations\\)$`,
        "m",
      ),
    );
    expect(out).toMatch(/^\s+ok\s+JWT secret\s+JWT_SECRET is set/m);
    expect(out + err).not.toContain(PASSWORD);
  }, 60_000);
});
