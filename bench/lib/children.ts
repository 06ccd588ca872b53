/**
 * The bench servers' processes (bench/lib/*-server.ts), shared by the benches
 * that start them (gateway.ts, replicas.ts): each pinned to a core and
 * awaited until its `READY {json}` line on stderr; every one started is in
 * `children`, so a bench that aborts can kill them all. Plus the two order
 * statistics every bench reports.
 */
import { join } from "node:path";
import type { Subprocess } from "bun";
import { haveTaskset, pinned } from "./wrk";

/** The servers' core; wrk, anvil and the bench itself run on LOAD_CPU. */
export const SERVER_CPU = 0;
export const LOAD_CPU = 1;

/** Moves a running process (its main thread; children forked later inherit it) onto `cpu`. */
export function pin(pid: number, cpu: number, allThreads = false) {
  if (haveTaskset())
    Bun.spawnSync(["taskset", allThreads ? "-acp" : "-cp", String(cpu), String(pid)], {
      stdout: "ignore",
      stderr: "ignore",
    });
}

export interface Child {
  proc: Subprocess<"pipe", "ignore", "pipe">;
  ready: Record<string, any>;
}

export const children = new Set<Subprocess>();

/** Starts a bench server (bench/lib/*.ts) pinned to SERVER_CPU and waits for its READY line. */
export async function startChild(script: string, env: Record<string, string>, timeoutMs = 120_000): Promise<Child> {
  const proc = Bun.spawn([...pinned(SERVER_CPU), process.execPath, join(import.meta.dir, script)], {
    env: { ...process.env, ...env },
    stdin: "pipe", // held open: the child exits when it closes
    stdout: "ignore", // the request log is written, as in production, to /dev/null
    stderr: "pipe",
  });
  children.add(proc);
  const reader = proc.stderr.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`${script} exited before it was ready:\n${text}`);
      text += decoder.decode(value, { stream: true });
      const line = /^READY (.*)$/m.exec(text);
      if (line) {
        // Keep draining stderr so the child never blocks on a full pipe.
        void (async () => {
          for (;;) {
            const { value: more, done: end } = await reader.read().catch(() => ({ value: undefined, done: true }));
            if (end) return;
            const s = decoder.decode(more);
            if (s.trim()) process.stderr.write(`[${script}] ${s}`);
          }
        })();
        return { proc, ready: JSON.parse(line[1]) };
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

export async function stopChild(proc: Subprocess) {
  proc.kill("SIGTERM");
  const gone = await Promise.race([proc.exited.then(() => true), Bun.sleep(3000).then(() => false)]);
  if (!gone) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
  children.delete(proc);
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

export const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
