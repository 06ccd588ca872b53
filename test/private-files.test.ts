/**
 * Modes (issue 10, item 7): the data folder 0700; the database, its WAL and
 * SHM, the JWT secret and devnet.json 0600; wider existing modes tightened
 * with a warning that names no absolute path.
 */
import { afterAll, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../src/db/client";
import { resolveJwtSecret } from "../src/http/jwt-secret";

const root = mkdtempSync(join(tmpdir(), "cidgate-modes-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const modeOf = (path: string) => statSync(path).mode & 0o777;

test("a fresh database: its folder (made by openDb) is 0700, the file, WAL and SHM 0600; no warning", () => {
  const dir = join(root, "fresh", "data");
  const warnings: string[] = [];
  const db = openDb(join(dir, "cidgate.db"), { warn: (m) => warnings.push(m) });
  db.sqlite.exec("CREATE TABLE t (x)"); // a write, so the WAL exists
  expect(modeOf(dir)).toBe(0o700);
  for (const f of ["cidgate.db", "cidgate.db-wal", "cidgate.db-shm"]) {
    expect(existsSync(join(dir, f))).toBe(true);
    expect(modeOf(join(dir, f))).toBe(0o600);
  }
  db.sqlite.close();
  expect(warnings).toEqual([]);
});

test("openDb then the JWT secret in the same folder (the order the server runs): both private", () => {
  const dir = join(root, "server-order");
  const db = openDb(join(dir, "cidgate.db"), { warn: () => {} });
  resolveJwtSecret({ jwtSecret: undefined, dataDir: dir }, () => {});
  expect(modeOf(dir)).toBe(0o700);
  expect(modeOf(join(dir, "jwt-secret"))).toBe(0o600);
  db.sqlite.close();
});

test("an existing 0755 folder with a 0644 database, WAL and SHM is tightened, with one warning each", () => {
  const dir = join(root, "wide");
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  const first = openDb(join(dir, "cidgate.db"), { warn: () => {} });
  first.sqlite.exec("CREATE TABLE t (x)");
  // Keep WAL and SHM on disk: a second connection holds them open while we widen everything.
  for (const f of ["cidgate.db", "cidgate.db-wal", "cidgate.db-shm"]) chmodSync(join(dir, f), 0o644);
  chmodSync(dir, 0o755);
  const warnings: string[] = [];
  const second = openDb(join(dir, "cidgate.db"), { warn: (m) => warnings.push(m) });
  expect(modeOf(dir)).toBe(0o700);
  for (const f of ["cidgate.db", "cidgate.db-wal", "cidgate.db-shm"]) expect(modeOf(join(dir, f))).toBe(0o600);
  expect(warnings).toHaveLength(4);
  expect(warnings.join("\n")).toContain("0755");
  expect(warnings.join("\n")).toContain("0644");
  for (const w of warnings) expect(w).not.toContain(root); // no absolute path in a warning
  second.sqlite.close();
  first.sqlite.close();
});

test("a jwt-secret restored 0644 in a 0777 data folder is tightened with a warning, and still read", () => {
  const dir = join(root, "secret");
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o777);
  writeFileSync(join(dir, "jwt-secret"), `${"s".repeat(40)}\n`, { mode: 0o644 });
  chmodSync(join(dir, "jwt-secret"), 0o644);
  const warnings: string[] = [];
  const secret = resolveJwtSecret({ jwtSecret: undefined, dataDir: dir }, (m) => warnings.push(m));
  expect(secret).toBe("s".repeat(40));
  expect(modeOf(dir)).toBe(0o700);
  expect(modeOf(join(dir, "jwt-secret"))).toBe(0o600);
  expect(warnings).toHaveLength(2);
  expect(warnings.some((w) => w.includes("jwt-secret") && w.includes("0644"))).toBe(true);
});

test("`cidgate devnet` writes devnet.json 0600 into a folder it tightens to 0700, with a warning", async () => {
  const dir = join(root, "devnet");
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  const out = join(dir, "devnet.json");
  const p = Bun.spawn(
    ["node_modules/.bin/bun", "src/cli/main.ts", "devnet", "--port", "0", "--buyers", "1", "--out", out],
    { cwd: join(import.meta.dir, ".."), stdout: "pipe", stderr: "pipe" },
  );
  try {
    const reader = (p.stdout as ReadableStream<Uint8Array>).getReader();
    let text = "";
    while (!text.includes("Ctrl-C stops the chain")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    reader.releaseLock();
    expect(modeOf(dir)).toBe(0o700);
    expect(modeOf(out)).toBe(0o600);
  } finally {
    p.kill("SIGINT");
    await p.exited;
  }
  const stderr = await new Response(p.stderr as ReadableStream).text();
  expect(stderr).toContain("tightened to 0700");
  expect(stderr).not.toContain(root);
}, 30_000);

test("a shared folder (other files in it) is never narrowed: a warning says to do it by hand", () => {
  const dir = join(root, "shared");
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, "someone-else.txt"), "not cidgate's\n");
  const warnings: string[] = [];
  const db = openDb(join(dir, "ledger.sqlite"), { warn: (m) => warnings.push(m) });
  expect(modeOf(dir)).toBe(0o755);
  expect(modeOf(join(dir, "ledger.sqlite"))).toBe(0o600);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain("left as it is");
  db.sqlite.close();
});
