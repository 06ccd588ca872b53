/**
 * cidgate as its own process (`bun src/index.ts`, as `npm start` runs it) on a
 * database file, so a chaos case can kill -9 it in the middle of paid
 * traffic and start it again on the same file.
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../src/db/client";
import { loadSettings } from "../src/settings";
import { type ChaosChain, gatewayEnv, priceFiles } from "./stack";

const ROOT = join(import.meta.dir, "..");

export interface GatewayProcess {
  url: string;
  pid: number;
  /** SIGKILL, and wait until it is gone. */
  kill9(): Promise<void>;
  /** SIGTERM, and wait. */
  stop(): Promise<void>;
}

export interface ProcessGateway {
  dir: string;
  dbPath: string;
  env: Record<string, string>;
  cids: Record<string, string>;
  /** Starts a cidgate process on the database (RECONCILE_SECONDS etc. from `env`). */
  start(): Promise<GatewayProcess>;
  /** A read-only look at the database while processes come and go. */
  query<T>(sql: string): T[];
  remove(): void;
}

/** Prices the files into a new database file; each `start()` runs a cidgate process over it. */
export async function prepareProcessGateway(
  chain: ChaosChain,
  o: { rpc: boolean; files: Record<string, string>; env?: Record<string, string>; access?: "once" | "forever" },
): Promise<ProcessGateway> {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-chaos-proc-"));
  const dbPath = join(dir, "cidgate.db");
  const env = gatewayEnv(chain, dir, { rpc: o.rpc, db: dbPath, env: { JWT_SECRET: "x".repeat(40), ...o.env } });
  const settings = loadSettings(env);
  const db = openDb(dbPath);
  const { cids } = await priceFiles(db, settings, chain, o.files, o.access);
  db.sqlite.close();
  let reader: Database | undefined;
  return {
    dir,
    dbPath,
    env,
    cids,
    async start() {
      const child = Bun.spawn([process.execPath, "src/index.ts"], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
        stdout: "pipe",
        stderr: "ignore",
      });
      const reader = child.stdout.getReader();
      let text = "";
      const deadline = Date.now() + 30_000;
      let url: string | undefined;
      while (!url) {
        if (Date.now() > deadline) throw new Error("cidgate did not start within 30 s");
        // Raced with the deadline: a server that never prints the line must not hang the suite.
        const { done, value } = await Promise.race([
          reader.read(),
          Bun.sleep(Math.max(0, deadline - Date.now())).then(() => ({ done: false, value: undefined })),
        ]);
        if (value === undefined && !done) continue;
        if (done) throw new Error(`cidgate exited before listening: ${text.slice(0, 500)}`);
        text += new TextDecoder().decode(value);
        url = /cidgate \S+ listening on (http:\/\/[^\s;]+)/.exec(text)?.[1]; // the start-up summary's first line
      }
      // Keep draining its output so a full pipe never blocks it.
      void (async () => {
        try {
          for (;;) if ((await reader.read()).done) break;
        } catch {}
      })();
      const gone = async (signal: number) => {
        child.kill(signal);
        await child.exited;
      };
      return { url, pid: child.pid, kill9: () => gone(9), stop: () => gone(15) };
    },
    query<T>(sql: string): T[] {
      reader ??= new Database(dbPath, { readonly: true });
      return reader.query(sql).all() as T[];
    },
    remove() {
      reader?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
