/**
 * `npm start` as a creator runs it: the real entry point in its own process.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");
const dir = mkdtempSync(join(tmpdir(), "cidgate-boot-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

function start(env: Record<string, string>) {
  return Bun.spawn([process.execPath, "src/index.ts"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: dir, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
}

async function readUntil(stream: ReadableStream<Uint8Array>, pattern: RegExp, timeoutMs = 10_000): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(text)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}; got: ${text}`);
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
  }
  reader.releaseLock();
  return text;
}

test("a bad setting stops start-up with one line naming the variable", async () => {
  const proc = start({ PORT: "eighty", CIDGATE_DB: ":memory:" });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  expect(code).toBe(2);
  expect(stderr.trim()).toBe('cidgate: bad setting PORT: a whole number from 0 to 65535 (got "eighty")');
});

test("several bad settings, LOG_LEVEL among them: one line each, all at once, no stack", async () => {
  const proc = start({ PORT: "eighty", LOG_LEVEL: "verbose", RELAYER_PRIVATE_KEY: "0xsecret", CIDGATE_DB: ":memory:" });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  expect(code).toBe(2);
  expect(stderr.trim().split("\n")).toEqual([
    'cidgate: bad setting PORT: a whole number from 0 to 65535 (got "eighty")',
    "cidgate: bad setting RELAYER_PRIVATE_KEY: a 0x-prefixed 32-byte hex private key",
    'cidgate: bad setting LOG_LEVEL: one of fatal, error, warn, info, debug, trace, silent (got "verbose")',
  ]);
});

test("start-up prints where it listens, the database and how to make a token; SIGTERM exits 0", async () => {
  mkdirSync(join(dir, "config"));
  mkdirSync(join(dir, "content"));
  writeFileSync(join(dir, "content", "hello.txt"), "hello\n");
  const port = freePort();
  const db = join(dir, "data", "cidgate.db");
  const proc = start({
    PORT: String(port),
    CIDGATE_DB: db,
    CIDGATE_CONFIG_DIR: join(dir, "config"),
    CIDGATE_CONTENT_DIR: join(dir, "content"),
    LOG_LEVEL: "warn",
  });
  try {
    const out = await readUntil(proc.stdout, /token create/);
    expect(out).toContain(`listening on http://127.0.0.1:${port}`);
    expect(out).toContain(`database     ${db}`);
    expect(out).toContain("token create --scope read,write");

    // It answers, in the error shape, and the generated JWT secret is private to its owner.
    const res = await fetch(`http://127.0.0.1:${port}/v3/x402/payment_instructions`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBeString();
    expect(statSync(join(dir, "data", "jwt-secret")).mode & 0o777).toBe(0o600);

    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    // The database was closed cleanly: WAL checkpointed away.
    expect(() => statSync(`${db}-wal`)).toThrow();
  } finally {
    proc.kill("SIGKILL");
  }
}, 20_000); // a process that runs the start-up checks, then listens: slow on a busy machine
