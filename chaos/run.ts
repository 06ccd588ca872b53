/**
 * A minimal runner for the chaos cases (the lead keeps branch i10a's runner
 * when merging): `bun chaos/run.ts [name...]` runs chaos/cases/<name>.ts (all
 * of them when none is named), one after another, and prints one table of
 * case, tried, wrong. Exits 1 when anything was wrong.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { ChaosCase, ChaosRow } from "./case";

const dir = join(import.meta.dir, "cases");
const names = process.argv.slice(2).length
  ? process.argv.slice(2)
  : readdirSync(dir)
      .filter((f) => f.endsWith(".ts"))
      .map((f) => f.slice(0, -3))
      .sort();

const rows: ChaosRow[] = [];
for (const name of names) {
  const started = performance.now();
  const run = (await import(join(dir, `${name}.ts`))).default as ChaosCase;
  try {
    const got = await run();
    rows.push(...got);
    console.error(`${name}: ${got.length} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } catch (e) {
    rows.push({ case: name, tried: 0, wrong: 1, note: `the case failed to run: ${(e as Error).message}` });
  }
}

const width = Math.max(4, ...rows.map((r) => r.case.length));
console.log(`| ${"case".padEnd(width)} | tried | wrong | note`);
console.log(`|${"-".repeat(width + 2)}|-------|-------|-----`);
for (const r of rows)
  console.log(
    `| ${r.case.padEnd(width)} | ${String(r.tried).padStart(5)} | ${String(r.wrong).padStart(5)} | ${r.note ?? ""}`,
  );
process.exitCode = rows.some((r) => r.wrong > 0) ? 1 : 0;
