/**
 * Management tokens have ids, are listed and revoked by the CLI or the API,
 * and a running server refuses a revoked token from its very next request,
 * even when another process (the CLI) revoked it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../src/http/logging";
import { createToken } from "../../src/http/token";
import { type RunningServer, startServer } from "../../src/server";
import { loadSettings } from "../../src/settings";

const MAIN = join(import.meta.dir, "../../src/cli/main.ts");
const SECRET = "revocation-test-secret-revocation-test-01";

let dir: string;
let env: Record<string, string>;
let server: RunningServer;

function cidgate(args: string[]) {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { env: { PATH: process.env.PATH ?? "", ...env } });
  return { code: p.exitCode, out: p.stdout.toString().trim(), err: p.stderr.toString() };
}

async function call(method: string, path: string, token: string) {
  const res = await fetch(`${server.url}${path}`, { method, headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, json: (await res.json()) as any };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cidgate-tokens-"));
  env = {
    CIDGATE_DB: join(dir, "cidgate.db"),
    JWT_SECRET: SECRET,
    CIDGATE_CONFIG_DIR: join(dir, "config"),
    CIDGATE_CONTENT_DIR: join(dir, "content"),
  };
  // The production server on the same file the CLI writes, in this process.
  server = await startServer({
    settings: loadSettings({ ...env, HOST: "127.0.0.1", PORT: "0" }),
    log: createLogger("silent"),
    pricing: false,
  });
});

afterAll(async () => {
  await server.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

describe("management tokens", () => {
  test("revoked by the CLI while the server runs: refused from the next request on; others keep working", async () => {
    const made = cidgate(["token", "create", "--scope", "read", "--label", "laptop"]);
    expect(made.code).toBe(0);
    const id = /^id ([0-9a-f-]{36});/.exec(made.err)?.[1];
    expect(id).toBeDefined();
    const other = cidgate(["token", "create", "--scope", "read"]).out;

    expect((await call("GET", "/v3/x402/payments", made.out)).status).toBe(200);
    const listed = cidgate(["token", "list"]);
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(new RegExp(`^${id}  read\\s+active, expires \\S+\\s+laptop$`, "m"));

    const revoked = cidgate(["token", "revoke", id!]);
    expect(revoked).toMatchObject({ code: 0, err: "" });
    // The next request, no waiting: the server reads the table on every management request.
    const refused = await call("GET", "/v3/x402/payments", made.out);
    expect(refused.status).toBe(401);
    expect(refused.json.error).toEqual({ code: "unauthorized", message: "the bearer token was revoked" });
    expect((await call("GET", "/v3/x402/payments", other)).status).toBe(200);
    expect(cidgate(["token", "list"]).out).toMatch(new RegExp(`^${id}  read\\s+revoked \\S+\\s+laptop$`, "m"));
    // Again: not an error, the first time stays.
    expect(cidgate(["token", "revoke", id!]).out).toBe(revoked.out);
  }, 60_000);

  test("the API lists tokens and revokes one; a read token may list but not revoke; an unknown id is 404", async () => {
    const admin = cidgate(["token", "create", "--label", "admin"]).out;
    const reader = cidgate(["token", "create", "--scope", "read", "--label", "reader"]);
    const readerId = /^id (\S+);/.exec(reader.err)![1];

    const list = await call("GET", "/v3/x402/tokens", reader.out);
    expect(list.status).toBe(200);
    const entry = list.json.data.tokens.find((t: { id: string }) => t.id === readerId);
    expect(entry).toMatchObject({ scopes: ["read"], label: "reader", status: "active", revoked_at: null });
    expect(JSON.stringify(list.json)).not.toContain(reader.out); // ids, never the tokens

    expect((await call("DELETE", `/v3/x402/tokens/${readerId}`, reader.out)).status).toBe(403);
    const del = await call("DELETE", `/v3/x402/tokens/${readerId}`, admin);
    expect(del.status).toBe(200);
    expect(del.json.data).toMatchObject({ id: readerId, status: "revoked" });
    expect((await call("GET", "/v3/x402/tokens", reader.out)).status).toBe(401);
    const unknown = await call("DELETE", "/v3/x402/tokens/00000000-0000-4000-8000-000000000000", admin);
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe("not_found");
  }, 60_000);

  test("a token made before ids were recorded keeps working until revoked by the token itself", async () => {
    const legacy = await createToken(SECRET, { scopes: ["read"], ttlSeconds: 600 });
    expect((await call("GET", "/v3/x402/payments", legacy)).status).toBe(200);
    const r = cidgate(["token", "revoke", legacy]);
    expect(r.code).toBe(0);
    expect((await call("GET", "/v3/x402/payments", legacy)).status).toBe(401);
    // now recorded, so it is listed
    const id = /^revoked (\S+) at/.exec(r.out)![1];
    expect(cidgate(["token", "list"]).out).toContain(id);
    // a token signed with another secret is not ours to revoke
    const foreign = await createToken("another-secret-another-secret-another-1", { scopes: ["read"], ttlSeconds: 600 });
    expect(cidgate(["token", "revoke", foreign]).code).toBe(1);
    expect(cidgate(["token", "revoke", "no-such-id"]).code).toBe(1);
  }, 60_000);

  test("--ttl defaults to 30d and stops at 366d", async () => {
    const r = cidgate(["token", "create", "--ttl", "366d"]);
    expect(r.code).toBe(0);
    const tooLong = cidgate(["token", "create", "--ttl", "367d"]);
    expect(tooLong.code).toBe(2);
    expect(tooLong.out).toBe("");
    expect(tooLong.err).toContain("at most 366d");
    const plain = cidgate(["token", "create"]);
    const expires = Date.parse(/expires (\S+);/.exec(plain.err)![1]);
    expect(Math.round((expires - Date.now()) / 86400_000)).toBe(30);
  }, 60_000);
});
