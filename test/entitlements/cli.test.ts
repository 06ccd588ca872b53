/**
 * The real `cidgate entitlements` in its own process over a database file:
 * grant, list, revoke, and the one-line refusals with the shared exit codes
 * (1 for what the database refuses, 2 for bad usage).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAddress } from "viem";
import { openDb } from "../../src/db/client";
import { createStores } from "../../src/stores";
import { BASE_SEPOLIA_USDC, CID_V0, CID_V1, PAY_TO } from "../instructions/harness";

const MAIN = join(import.meta.dir, "../../src/cli/main.ts");
const PAYER = getAddress("0x7777777777777777777777777777777777777abc");

let dir: string;
let dbPath: string;
let instructionId: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cidgate-entitlements-"));
  dbPath = join(dir, "cidgate.db");
  const db = openDb(dbPath);
  const stores = createStores(db, { contentDir: join(dir, "content") });
  const pi = stores.instructions.create({
    name: "Premium",
    requirements: [{ network: "base-sepolia", asset: BASE_SEPOLIA_USDC, pay_to: PAY_TO, amount: "10000" }],
  });
  stores.instructions.attachCid(pi.id, CID_V1);
  instructionId = pi.id;
  db.sqlite.close();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function cidgate(...args: string[]) {
  const p = Bun.spawnSync([process.execPath, MAIN, "entitlements", ...args], {
    env: { PATH: process.env.PATH ?? "", CIDGATE_DB: dbPath, CIDGATE_CONTENT_DIR: join(dir, "content") },
  });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

function rows() {
  const db = openDb(dbPath);
  try {
    return createStores(db, { contentDir: join(dir, "content") }).entitlements.list({}, { limit: 100 }).items;
  } finally {
    db.sqlite.close();
  }
}

describe("cidgate entitlements", () => {
  test("grant prints the new id; list shows it; revoke stamps it; list says revoked", () => {
    const granted = cidgate(
      "grant",
      "--payer",
      PAYER.toLowerCase(),
      "--instruction",
      instructionId,
      "--cid",
      CID_V1,
      "--for",
      "30d",
      "--note",
      "refund made good",
    );
    expect(granted.err).toContain(`granted ${PAYER} cid ${CID_V1}, expires 20`);
    expect(granted.code).toBe(0);
    const id = Number(granted.out.trim());
    const [row] = rows();
    expect(row).toMatchObject({
      id,
      payer: PAYER,
      scope: "cid",
      cid: CID_V1,
      source: "grant",
      note: "refund made good",
    });
    const month = Math.floor(Date.now() / 1000) + 30 * 86_400;
    expect(Math.abs(row.expiresAt! - month)).toBeLessThan(60);

    const listed = cidgate("list", "--payer", PAYER);
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(new RegExp(`^  ${id}\\s+${PAYER}  cid ${CID_V1}  grant  20\\S+  active$`, "m"));

    const revoked = cidgate("revoke", String(id));
    expect(revoked.code).toBe(0);
    expect(revoked.out).toContain(`revoked ${id}`);
    expect(rows()[0].revokedAt).toBeString();
    expect(cidgate("list").out).toMatch(/ revoked 20\S+$/m);
  }, 20_000);

  test("grant without --cid covers the instruction, without expiry; --expires takes an ISO time", () => {
    expect(cidgate("grant", "--payer", PAYER, "--instruction", instructionId).code).toBe(0);
    expect(
      cidgate("grant", "--payer", PAYER, "--instruction", instructionId, "--expires", "2099-01-01T00:00:00Z").code,
    ).toBe(0);
    const [dated, wide] = rows();
    expect(wide).toMatchObject({ scope: "instruction", cid: null, expiresAt: null });
    expect(dated.expiresAt).toBe(Date.parse("2099-01-01T00:00:00Z") / 1000);
    expect(cidgate("list", "--cid", CID_V0).err).toBe("no entitlements\n");
  }, 20_000);

  test("what the database refuses: one line, exit 1, nothing written", () => {
    const unknown = cidgate("grant", "--payer", PAYER, "--instruction", "0190a000-0000-7000-8000-0000000000ff");
    expect(unknown).toEqual({
      code: 1,
      out: "",
      err: "cidgate entitlements grant: no payment instruction 0190a000-0000-7000-8000-0000000000ff\n",
    });
    const detached = cidgate("grant", "--payer", PAYER, "--instruction", instructionId, "--cid", CID_V0);
    expect(detached.code).toBe(1);
    expect(detached.err).toBe(
      `cidgate entitlements grant: CID ${CID_V0} is not attached to payment instruction ${instructionId}\n`,
    );
    expect(cidgate("revoke", "42")).toEqual({
      code: 1,
      out: "",
      err: "cidgate entitlements revoke: no entitlement 42\n",
    });
    expect(rows()).toEqual([]);
  }, 20_000);

  test("bad usage: one line, exit 2", () => {
    const cases: [string[], string][] = [
      [[], "cidgate entitlements: missing subcommand: list, grant or revoke"],
      [["pardon"], "cidgate entitlements: unknown subcommand pardon"],
      [["--frobnicate"], "cidgate entitlements: unknown option --frobnicate"],
      [["grant", "--instruction", instructionId], "--payer is required"],
      [["grant", "--payer", "0x12", "--instruction", instructionId], '--payer "0x12" is not a 0x-prefixed'],
      [["grant", "--payer", PAYER], "--instruction is required"],
      [
        ["grant", "--payer", PAYER, "--instruction", instructionId, "--for", "30"],
        "--for needs a whole number with a unit",
      ],
      [
        ["grant", "--payer", PAYER, "--instruction", instructionId, "--for", "1d", "--expires", "2099-01-01T00:00:00Z"],
        "give --expires or --for, not both",
      ],
      [
        ["grant", "--payer", PAYER, "--instruction", instructionId, "--expires", "2001-01-01T00:00:00Z"],
        "is not in the future",
      ],
      [["list", "--cid", "nope"], '--cid "nope" is not a CID'],
      [["revoke", "abc"], '"abc" is not an entitlement id'],
      [["revoke"], "missing <id>"],
    ];
    for (const [args, message] of cases) {
      const r = cidgate(...args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.out).toBe("");
      expect(r.err.trim().split("\n")).toHaveLength(1);
      expect(r.err).toContain(message);
    }
    expect(rows()).toEqual([]);
  }, 60_000);

  test("--help of the group and of each subcommand", () => {
    const group = cidgate("--help");
    expect(group.code).toBe(0);
    expect(group.out).toContain("usage: cidgate entitlements <list|grant|revoke>");
    for (const sub of ["list", "grant", "revoke"]) {
      const r = cidgate(sub, "--help");
      expect(r.code).toBe(0);
      expect(r.out).toStartWith(`cidgate entitlements ${sub}: `);
    }
  }, 20_000);
});
