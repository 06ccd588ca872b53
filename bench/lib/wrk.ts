/**
 * Runs wrk (Debian: `apt-get install -y wrk`) pinned to a core and parses
 * its report: requests/s, bytes/s, latency percentiles and, with one of the
 * Lua scripts here, the count of each response status.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface WrkResult {
  requests: number;
  seconds: number;
  rps: number;
  bytesPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: string | undefined;
  /** Responses with a status outside 200-399 (wrk counts them always). */
  non2xx3xx: number;
  /** CPU time the server process used during the run (utime + stime of all its threads), when `serverPid` was given. */
  serverCpuMs: number | undefined;
  /** serverCpuMs per completed request, in microseconds: capacity that other load on the machine hardly disturbs. */
  serverCpuUsPerRequest: number | undefined;
  /** Count per status, only with `countStatuses` or `rotate` (wrk's Lua then sees every body: slower). */
  statuses: Record<number, number>;
}

export interface WrkRun {
  url: string;
  connections: number;
  seconds: number;
  /** CPU to pin wrk to (taskset), if taskset exists. */
  cpu?: number;
  headers?: Record<string, string>;
  /** Rotate one header through the values in this file (one per line). */
  rotate?: { header: string; file: string };
  /** Count each status in Lua; costs wrk a copy of every body, so not for big downloads. */
  countStatuses?: boolean;
  timeoutSeconds?: number;
  /** Process whose CPU time to measure over the run (Linux /proc). */
  serverPid?: number;
}

const TICK_MS = 1000 / 100; // USER_HZ is 100 on Linux

/** utime + stime of a process, all threads, in ms (undefined off Linux). */
export function cpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th fields.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return undefined;
  }
}

export function haveWrk(): boolean {
  return Bun.which("wrk") !== null;
}

export const haveTaskset = (): boolean => Bun.which("taskset") !== null;

/** Prefix that pins a command to `cpu` (empty without taskset). */
export const pinned = (cpu: number | undefined): string[] =>
  cpu !== undefined && haveTaskset() ? ["taskset", "-c", String(cpu)] : [];

const UNITS_TIME: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const UNITS_BYTES: Record<string, number> = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 };

function ms(text: string | undefined): number {
  const m = /^([\d.]+)(us|ms|s|m|h)$/.exec(text ?? "");
  return m ? Number(m[1]) * UNITS_TIME[m[2]] : Number.NaN;
}

function bytes(text: string): number {
  const m = /^([\d.]+)(B|KB|MB|GB|TB)$/.exec(text);
  return m ? Number(m[1]) * UNITS_BYTES[m[2]] : Number.NaN;
}

export async function runWrk(run: WrkRun): Promise<WrkResult> {
  const args = [
    "wrk",
    "-t1",
    `-c${run.connections}`,
    `-d${run.seconds}s`,
    "--latency",
    `--timeout`,
    `${run.timeoutSeconds ?? 10}s`,
  ];
  for (const [k, v] of Object.entries(run.headers ?? {})) args.push("-H", `${k}: ${v}`);
  if (run.rotate || run.countStatuses) args.push("-s", join(import.meta.dir, "count-statuses.lua"));
  args.push(run.url);
  if (run.rotate) args.push("--", run.rotate.header, run.rotate.file);
  const cpuBefore = run.serverPid ? cpuMs(run.serverPid) : undefined;
  const proc = Bun.spawn([...pinned(run.cpu), ...args], { stdout: "pipe", stderr: "pipe" });
  // wrk ends by itself after -d; the kill is a bound in case it wedges.
  const guard = setTimeout(() => proc.kill("SIGKILL"), (run.seconds + 30) * 1000);
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(guard);
  const cpuAfter = run.serverPid ? cpuMs(run.serverPid) : undefined;
  if (code !== 0) throw new Error(`wrk failed (${code}): ${err || out}`);

  const done = /(\d+) requests in ([\d.]+)(us|ms|s|m), ([\d.]+[KMGT]?B) read/.exec(out);
  if (!done) throw new Error(`cannot read wrk output:\n${out}`);
  const requests = Number(done[1]);
  const seconds = (Number(done[2]) * UNITS_TIME[done[3]]) / 1000;
  const statuses: Record<number, number> = {};
  for (const m of out.matchAll(/^STATUS (\d+) (\d+)$/gm)) statuses[Number(m[1])] = Number(m[2]);
  const max = /Latency\s+\S+\s+\S+\s+(\S+)/.exec(out)?.[1];
  const serverCpuMs = cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined;
  return {
    serverCpuMs,
    serverCpuUsPerRequest: serverCpuMs !== undefined && requests > 0 ? (serverCpuMs * 1000) / requests : undefined,
    requests,
    seconds,
    rps: requests / seconds,
    bytesPerSecond: bytes(done[4]) / seconds,
    p50Ms: ms(/^\s+50%\s+(\S+)/m.exec(out)?.[1]),
    p99Ms: ms(/^\s+99%\s+(\S+)/m.exec(out)?.[1]),
    maxMs: ms(max),
    errors: /Socket errors: .*/.exec(out)?.[0],
    non2xx3xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    statuses,
  };
}
