/**
 * Rows as aligned columns for a terminal (the start-up summary, `content
 * list`, `payments`): two spaces between columns, the last one unpadded.
 */
export function grid(rows: readonly (readonly string[])[], indent = "  "): string {
  const widths: number[] = [];
  for (const row of rows) for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  return rows
    .map((row) => indent + row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join("  "))
    .join("\n");
}
