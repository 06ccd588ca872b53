/**
 * A real PostgreSQL for tests: Debian's binaries, one throwaway server per test
 * process (started lazily by the first test that asks, shared by every test file
 * of that `bun test` process), and a fresh empty database per caller.
 *
 * PostgreSQL refuses to run as root, so as root the server (and initdb) run as
 * `nobody` through util-linux's setpriv (Essential on Debian, so present even
 * on a minimal bookworm), in a temp folder handed to that user. It listens on
 * 127.0.0.1 only, on a free port, with trust auth (initdb --auth=trust): no
 * password in any test URL.
 *
 * Stopping: `bun test` (1.4.5) never emits 'exit' or 'beforeExit' (oven-sh/bun
 * #8434, #38442: only for node:test files or BUN_TEST_DRAIN_EVENT_LOOP=1), so
 * those hooks only serve scripts (bench/pg-driver.ts). What always works: the
 * postmaster carries a parent-death signal (setpriv --pdeathsig), so it stops
 * when the test process ends however it ends, and a small shell watcher
 * removes the folder once the postmaster is gone.
 *
 * Without PostgreSQL a test is skipped loudly, or fails under
 * CIDGATE_REQUIRE_SYSTEM_PARTS=1 (test/support/system-parts.ts; .ci/run
 * installs Debian's postgresql).
 */
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { SQL } from "bun";
import { eventually } from "./eventually";
import { systemPart } from "./system-parts";

/** The folder holding initdb and postgres: on PATH, else Debian's newest /usr/lib/postgresql/<version>/bin. */
export function pgBinDir(): string | undefined {
  const initdb = Bun.which("initdb");
  // Through symlinks (some images link Debian's binaries into /usr/local/bin): the real folder.
  if (initdb && existsSync(join(dirname(realpathSync(initdb)), "postgres"))) return dirname(realpathSync(initdb));
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+(\.\d+)?$/.test(v))
    .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
  for (const v of versions) {
    const bin = join(root, v, "bin");
    if (existsSync(join(bin, "initdb")) && existsSync(join(bin, "postgres"))) return bin;
  }
  return undefined;
}

/**
 * true when PostgreSQL's binaries are here; otherwise a loud line on stderr (a
 * throw under CIDGATE_REQUIRE_SYSTEM_PARTS=1). Use with describe.skipIf.
 * It does not start the server: a server that fails to start fails the tests.
 */
export async function pgAvailable(suite = "PostgreSQL tests"): Promise<boolean> {
  return (
    systemPart("postgres", suite, {
      ciInstalls: true,
      install: "apt-get install postgresql; .ci/run installs it",
      locate: pgBinDir,
    }) !== undefined
  );
}

export interface TestServer {
  /** The temp folder: data directory in `data/`, the unix socket beside it. */
  folder: string;
  dataDirectory: string;
  port: number;
  /** The postmaster's pid (from postmaster.pid). */
  pid: number;
  /** The uid the server runs as: `nobody`'s when the tests run as root, else the tests' own. */
  uid: number;
}

interface Started extends TestServer {
  admin: SQL;
}

let starting: Promise<Started> | undefined;
let running: Started | undefined;
let folderToRemove: string | undefined;
let databases = 0;

/** The shared server, started on first use. */
export function testServer(): Promise<TestServer> {
  starting ??= start().catch((e) => {
    starting = undefined; // a later test may try again (and fail with its own message)
    stopNow(); // a half-made folder goes now
    throw e;
  });
  return starting;
}

/** A `postgres://` URL of a new, empty database on the shared server (CREATE DATABASE, unique name). */
export async function createTestDatabase(): Promise<string> {
  const server = (await testServer()) as Started;
  const name = `cidgate_test_${++databases}`;
  await server.admin.unsafe(`CREATE DATABASE "${name}"`);
  return urlFor(server.port, name);
}

const urlFor = (port: number, database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;

/** uid/gid of `nobody`, from /etc/passwd (65534 on Debian). */
function nobody(): { uid: number; gid: number } {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith("nobody:"));
  if (!line) throw new Error("PostgreSQL tests run as root need the user nobody, and /etc/passwd has none");
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

/** A port free right now (bound, then closed); a race with another process is retried in start(). */
function freePort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

async function run(cmd: string[], cwd: string): Promise<void> {
  const child = Bun.spawn(cmd, {
    cwd,
    env: { PATH: process.env.PATH ?? "", LC_ALL: "C" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} exited ${code}:\n${out}${err}`);
}

async function start(): Promise<Started> {
  const bin = pgBinDir();
  if (!bin) throw new Error("PostgreSQL is not installed (apt-get install postgresql)");
  const asRoot = process.getuid?.() === 0;
  const base = tmpdir();
  if (asRoot && (statSync(base).mode & 0o001) === 0)
    throw new Error(`PostgreSQL tests run as root need a temp folder nobody can enter; ${base} is not (set TMPDIR)`);
  const folder = mkdtempSync(join(base, "cidgate-pg-"));
  folderToRemove = folder;
  process.once("exit", stopNow);
  process.once("beforeExit", stopNow);
  const dataDirectory = join(folder, "data");
  let uid = process.getuid?.() ?? 0;
  // setpriv execs the program, so the spawned pid is the program's own. --pdeathsig: a test process
  // killed outright (no 'exit' hook) still stops its server (SIGQUIT = immediate shutdown).
  const setpriv = Bun.which("setpriv");
  let wrap: string[] = setpriv ? [setpriv, "--pdeathsig", "SIGQUIT"] : [];
  if (asRoot) {
    if (!setpriv) throw new Error("PostgreSQL tests run as root need setpriv (util-linux) to drop to nobody");
    const user = nobody();
    uid = user.uid;
    chownSync(folder, user.uid, user.gid);
    wrap = [setpriv, "--reuid", String(user.uid), "--regid", String(user.gid), "--clear-groups", ...wrap.slice(1)];
  }
  // --no-sync: initdb skips its fsync of the new cluster, which dies with the process.
  await run(
    [
      ...wrap,
      join(bin, "initdb"),
      "-D",
      dataDirectory,
      "-U",
      "postgres",
      "--auth=trust",
      "--encoding=UTF8",
      "--locale=C",
      "--no-sync",
    ],
    folder,
  );

  let lastOutput = "";
  for (let attempt = 1; attempt <= 3; attempt++) {
    const port = freePort();
    const child = Bun.spawn(
      [
        ...wrap,
        join(bin, "postgres"),
        "-D",
        dataDirectory,
        "-p",
        String(port),
        "-k",
        folder,
        "-c",
        "listen_addresses=127.0.0.1",
        // Tests, not durability: the cluster is thrown away with the process, so nothing is flushed
        // to disk (no fsync, commits not waited for, no full-page images after checkpoints).
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
        "-c",
        "full_page_writes=off",
        // Every test file of the process shares this server, each with its own pools.
        "-c",
        "max_connections=300",
      ],
      { cwd: folder, env: { PATH: process.env.PATH ?? "", LC_ALL: "C" }, stdout: "ignore", stderr: "pipe" },
    );
    child.unref(); // the server must not keep the test process alive; 'exit' stops it
    let output = "";
    void (async () => {
      for await (const chunk of child.stderr) output += new TextDecoder().decode(chunk);
    })();
    await eventually(
      () => output.includes("ready to accept connections") || child.exitCode !== null,
      "PostgreSQL starting",
      60_000,
    ).catch((e) => {
      child.kill("SIGQUIT");
      throw new Error(`${(e as Error).message}:\n${output}`);
    });
    if (child.exitCode !== null) {
      lastOutput = output;
      if (output.includes("could not bind") || output.includes("Address already in use")) continue;
      throw new Error(`postgres exited ${child.exitCode}:\n${output}`);
    }
    const pid = Number(readFileSync(join(dataDirectory, "postmaster.pid"), "utf8").split("\n")[0]);
    removeWhenGone(pid, folder);
    const admin = new SQL({ url: urlFor(port, "postgres"), max: 1 });
    running = { folder, dataDirectory, port, pid, uid, admin };
    return running;
  }
  throw new Error(`postgres found no free port in 3 tries:\n${lastOutput}`);
}

/**
 * The folder goes once the postmaster does. A shell outside the test process (unref'd: it never
 * holds the tests up) polls once a second; it ignores the terminal's Ctrl-C, which reaches the whole
 * process group, so it outlives the test process it cleans up after.
 */
function removeWhenGone(pid: number, folder: string): void {
  const watcher = Bun.spawn(
    [
      "sh",
      "-c",
      'trap "" INT TERM HUP; while kill -0 "$0" 2>/dev/null; do sleep 1; done; rm -rf "$1"',
      String(pid),
      folder,
    ],
    { stdin: "ignore", stdout: "ignore", stderr: "ignore" },
  );
  watcher.unref();
}

/** Synchronous (the 'exit' hook runs no more async work): stop the postmaster, wait, remove the folder. */
function stopNow(): void {
  if (running) {
    const { pid } = running;
    running = undefined;
    try {
      process.kill(pid, "SIGQUIT"); // immediate shutdown: the postmaster takes its backends down
    } catch {}
    const until = Date.now() + 10_000;
    while (Date.now() < until && !gone(pid)) Bun.sleepSync(10);
  }
  if (folderToRemove) rmSync(folderToRemove, { recursive: true, force: true });
  folderToRemove = undefined;
}

/** Gone, or a zombie nobody has reaped yet (the 'exit' hook runs no event loop to reap it). */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? true;
  } catch {
    return true;
  }
}
