/**
 * `bun run chaos`: every case in chaos/cases/ (sorted by file name), one
 * after another, then a table (case, tried, wrong). Exit 1 if anything went
 * wrong, or a case could not run. `bun run chaos <name>...` runs only the
 * cases whose file name contains one of the names.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { ChaosCase, ChaosRow } from "./case";

const dir = join(import.meta.dir, "cases");
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".ts"))
  .filter((f) => only.length === 0 || only.some((name) => f.includes(name)))
  .sort();

const rows: ChaosRow[] = [];
let broken = 0;
for (const file of files) {
  const started = performance.now();
  process.stderr.write(`chaos: ${file} ...\n`);
  try {
    const run = (await import(join(dir, file))).default as ChaosCase;
    const got = await run();
    rows.push(...got);
    process.stderr.write(`chaos: ${file} done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  } catch (error) {
    broken++;
    rows.push({ case: file, tried: 0, wrong: 1, note: `could not run: ${(error as Error)?.message ?? error}` });
  }
}

const header = ["case", "tried", "wrong", "note"];
const cells = rows.map((r) => [r.case, String(r.tried), String(r.wrong), r.note ?? ""]);
const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
const line = (c: string[]) =>
  `| ${c.map((v, i) => (i === 1 || i === 2 ? v.padStart(widths[i]) : v.padEnd(widths[i]))).join(" | ")} |`;
console.log(line(header));
console.log(`|${widths.map((w, i) => (i === 1 || i === 2 ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`);
for (const c of cells) console.log(line(c));
const wrong = rows.reduce((n, r) => n + r.wrong, 0);
console.log(
  `\n${rows.length} rows, ${rows.reduce((n, r) => n + r.tried, 0)} tried, ${wrong} wrong${broken ? `, ${broken} case(s) failed to run` : ""}`,
);
process.exit(wrong > 0 ? 1 : 0);
