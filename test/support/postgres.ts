/**
 * A real PostgreSQL server for tests (Debian's binaries from PATH), started once per test
 * process on a free 127.0.0.1 port in a temporary folder and stopped at exit. PostgreSQL refuses
 * to run as root, so as root the server runs as `nobody` in a folder chowned to it.
 * Password authentication (scram-sha-256) is on, so a test can present a wrong password.
 *
 * A minimal local copy written on branch pgschema: the harness helper's version (branch
 * pgharness) has the same API and replaces this one at the merge.
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";

const NOBODY = 65534;
export const TEST_PG_PASSWORD = "test-only-secret";

function asServerUser(cmd: string[]): string[] {
  const root = process.getuid?.() === 0;
  return root ? ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--", ...cmd] : cmd;
}

/** initdb and pg_ctl on PATH. */
export function pgAvailable(): boolean {
  return ["initdb", "pg_ctl"].every((b) => spawnSync("sh", ["-c", `command -v ${b}`]).status === 0);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

let server: Promise<{ port: number }> | undefined;

async function start(): Promise<{ port: number }> {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-pg-"));
  const data = join(dir, "data");
  const pwfile = join(dir, "pw");
  writeFileSync(pwfile, `${TEST_PG_PASSWORD}\n`);
  if (process.getuid?.() === 0) {
    chownSync(dir, NOBODY, NOBODY);
    chownSync(pwfile, NOBODY, NOBODY);
  }
  chmodSync(dir, 0o700);
  const run = (cmd: string[]) => {
    const r = spawnSync(cmd[0] as string, cmd.slice(1), { cwd: dir, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${cmd.join(" ")} failed: ${r.stderr}`);
  };
  run(
    asServerUser([
      "initdb",
      "-D",
      data,
      "-U",
      "postgres",
      `--pwfile=${pwfile}`,
      "--auth=scram-sha-256",
      "-E",
      "UTF8",
      "--no-sync",
    ]),
  );
  const port = await freePort();
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
  run(asServerUser(["pg_ctl", "-D", data, "-l", join(dir, "log"), "-o", opts, "-w", "start"]));
  // Stopped when this process is gone, however it ends (bun test emits no "exit" to listeners):
  // a detached watcher polls for it, then stops the server and removes the folder.
  const stop = asServerUser(["pg_ctl", "-D", data, "-m", "immediate", "stop"]).join(" ");
  const watcher = spawn(
    "sh",
    ["-c", `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${stop} >/dev/null 2>&1; rm -rf ${dir}`],
    { detached: true, stdio: "ignore" },
  );
  watcher.unref();
  return { port };
}

let counter = 0;

/** A new empty database on the shared test server; its URL (with the password). */
export async function createTestDatabase(): Promise<string> {
  server ??= start();
  const { port } = await server;
  const name = `t_${process.pid}_${++counter}`;
  const admin = new SQL({ url: `postgres://postgres:${TEST_PG_PASSWORD}@127.0.0.1:${port}/postgres`, max: 1 });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await admin.close();
  }
  return `postgres://postgres:${TEST_PG_PASSWORD}@127.0.0.1:${port}/${name}`;
}
