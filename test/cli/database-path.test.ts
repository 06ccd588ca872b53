/**
 * The commands that read CIDGATE_DB or write a backup, at paths that are
 * wrong: a mistyped database is refused (never created, with its folder),
 * a backup whose folder is missing or not a folder is one line with exit 1
 * (no stack, no absolute path), and a junk restore changes nothing, not even
 * by copying the live database aside first. Then the list commands' columns
 * line up under their header.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAddress } from "viem";
import { openDb } from "../../src/db/client";
import { createStores } from "../../src/stores";
import { BASE_SEPOLIA_USDC, CID_V1, PAY_TO } from "../instructions/harness";

const MAIN = join(import.meta.dir, "../../src/cli/main.ts");

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cidgate-dbpath-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function cidgate(args: string[], env: Record<string, string>) {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], {
    env: { PATH: process.env.PATH ?? "", JWT_SECRET: "x".repeat(40), ...env },
    cwd: dir,
  });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

let instructionId: string;

/** A migrated database with one instruction, as the server leaves it. */
function liveDb(): string {
  const path = join(dir, "cidgate.db");
  const db = openDb(path);
  const stores = createStores(db, { contentDir: join(dir, "content") });
  const pi = stores.instructions.create({
    name: "Premium",
    requirements: [{ network: "base-sepolia", asset: BASE_SEPOLIA_USDC, pay_to: PAY_TO, amount: "10000" }],
  });
  stores.instructions.attachCid(pi.id, CID_V1);
  instructionId = pi.id;
  db.sqlite.close();
  return path;
}

describe("a CIDGATE_DB that is not there", () => {
  test("payments, token list and revoke, entitlements refuse it in one line, exit 1, and create nothing", () => {
    const path = "typo-dir/x.db";
    for (const [name, args] of [
      ["payments list", ["payments"]],
      ["payments list", ["payments", "--csv"]],
      ["token list", ["token", "list"]],
      ["token revoke", ["token", "revoke", "0190a000-0000-7000-8000-000000000001"]],
      ["entitlements list", ["entitlements", "list"]],
      ["entitlements revoke", ["entitlements", "revoke", "1"]],
    ] as const) {
      const r = cidgate([...args], { CIDGATE_DB: path });
      expect({ args, ...r }).toEqual({
        args,
        code: 1,
        out: "",
        err: `cidgate ${name}: no database at CIDGATE_DB (${path})\n`,
      });
      expect(existsSync(join(dir, "typo-dir"))).toBe(false);
    }
  });

  test("token create still makes the database: a token before the server's first start", () => {
    const r = cidgate(["token", "create", "--scope", "read"], { CIDGATE_DB: "fresh.db" });
    expect(r.code).toBe(0);
    expect(existsSync(join(dir, "fresh.db"))).toBe(true);
  });
});

describe("cidgate backup to a place it cannot write", () => {
  test("a missing folder or one that is a file: one line naming the file, exit 1, no stack, no absolute path", () => {
    const env = { CIDGATE_DB: liveDb() };
    writeFileSync(join(dir, "a-file"), "");
    for (const [target, reason] of [
      [join(dir, "missing", "x.db"), "its folder missing does not exist"],
      [join(dir, "a-file", "x.db"), "a-file is not a folder"],
      // A folder where no file can be made (SQLite's own refusal, reworded without its absolute path).
      ["/proc/x.db", process.getuid?.() === 0 ? "cannot create a file there" : "permission denied"],
    ]) {
      const r = cidgate(["backup", target], env);
      expect(r).toEqual({ code: 1, out: "", err: `cidgate backup: cannot write x.db: ${reason}\n` });
      expect(r.err).not.toContain(dir);
    }
    expect(existsSync(join(dir, "missing"))).toBe(false);
  });
});

describe("cidgate restore of a file that is no backup", () => {
  test("refused before the live database is copied aside: nothing written beside it", () => {
    const env = { CIDGATE_DB: liveDb() };
    writeFileSync(join(dir, "junk.db"), "not a database at all ".repeat(100));
    const before = readdirSync(dir).sort();
    for (const [file, reason] of [
      ["junk.db", "junk.db is not a SQLite database"],
      ["cidgate.db-not-there", "cidgate.db-not-there does not exist"],
    ]) {
      const r = cidgate(["restore", file], env);
      expect(r.code).toBe(1);
      expect(r.err).toContain(reason);
    }
    // A SQLite file that is not cidgate's: also refused before any copy.
    const other = openDb(join(dir, "other.db"));
    other.sqlite.exec("DROP TABLE payments");
    other.sqlite.close();
    const r = cidgate(["restore", "other.db"], env);
    expect(r).toMatchObject({ code: 1, err: "cidgate restore: other.db is not a cidgate database; nothing changed\n" });
    expect(readdirSync(dir).filter((f) => f.includes(".before-restore-"))).toEqual([]);
    expect(
      readdirSync(dir)
        .filter((f) => !f.startsWith("other.db"))
        .sort(),
    ).toEqual(before);
  });
});

describe("list columns", () => {
  test("entitlements list and token list: a header over aligned columns", () => {
    const env = { CIDGATE_DB: liveDb(), CIDGATE_CONTENT_DIR: join(dir, "content") };
    const payer = getAddress("0x7777777777777777777777777777777777777abc");
    expect(cidgate(["entitlements", "grant", "--payer", payer, "--instruction", instructionId], env).code).toBe(0);
    const ents = cidgate(["entitlements", "list"], env);
    expect(ents.code).toBe(0);
    const [head, row] = ents.out.trimEnd().split("\n");
    for (const [word, cell] of [
      ["payer", payer],
      ["covers", `instruction ${instructionId}`],
      ["from", "grant"],
      ["expires", "never"],
      ["state", "active"],
    ])
      expect({ word, at: head.indexOf(` ${word}`) + 1 }).toEqual({ word, at: row.indexOf(` ${cell}`) + 1 });

    expect(cidgate(["token", "create", "--scope", "read", "--label", "laptop"], env).code).toBe(0);
    const tokens = cidgate(["token", "list"], env);
    expect(tokens.code).toBe(0);
    const [thead, trow] = tokens.out.trimEnd().split("\n");
    expect(thead).toMatch(/^id +scopes +state +label$/);
    for (const [word, cell] of [
      ["scopes", "read"],
      ["state", "active"],
      ["label", "laptop"],
    ])
      expect({ word, at: thead.indexOf(` ${word}`) + 1 }).toEqual({ word, at: trow.indexOf(` ${cell}`) + 1 });
  });
});
