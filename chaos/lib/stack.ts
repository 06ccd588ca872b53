/**
 * What the chaos cases of issue 10, items 4–9, share: a whole cidgate on a fresh devnet
 * (test/e2e/stack.ts, nothing mocked), a seeded random source so a failing
 * run can be replayed (CHAOS_SEED), and a digest of every table so a case can
 * say "nothing changed" without trusting the answers.
 */
import { createHash } from "node:crypto";
import type { Db } from "../../src/db/client";

export { createTestStack, STACK_JWT_SECRET, type TestStack } from "../../test/e2e/stack";

/** mulberry32 over CHAOS_SEED (default 1): the same seed, the same inputs. */
export function seededRandom(seed = Number(process.env.CHAOS_SEED ?? 1)) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)],
    bytes: (n: number) => Uint8Array.from({ length: n }, () => Math.floor(next() * 256)),
  };
}

/** A digest of every row of each table (migrations' own bookkeeping aside), by table name. */
export function databaseDigest(db: Db): Record<string, string> {
  const tables = db.sqlite
    .query<{ name: string }, []>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%' ORDER BY name",
    )
    .all();
  const out: Record<string, string> = {};
  for (const { name } of tables) {
    const hash = createHash("sha256");
    for (const row of db.sqlite.query(`SELECT * FROM "${name}" ORDER BY rowid`).all()) hash.update(JSON.stringify(row));
    out[name] = hash.digest("hex");
  }
  return out;
}

/** The tables whose rows differ between two digests. */
export function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  return Object.keys({ ...before, ...after }).filter((t) => before[t] !== after[t]);
}

/** A 5xx whose body is not the one JSON error shape (Bun's "Something went wrong!", say). */
export async function isPlainServerError(res: Response): Promise<boolean> {
  if (res.status < 500) return false;
  const text = await res.clone().text();
  try {
    return typeof (JSON.parse(text) as { error?: { code?: unknown } }).error?.code !== "string";
  } catch {
    return true;
  }
}
