/** Durations as people write them in settings, YAML and on the command line. */

/**
 * Parses a TTL like `90s`, `15m`, `12h`, `30d` or `2w`; undefined for anything
 * else, a bare number included (seconds? days? a unit says which).
 */
export function parseTtl(text: string): number | undefined {
  const m = /^(\d+)\s*([smhdw])$/.exec(text.trim());
  if (!m) return undefined;
  const unit = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[m[2] as "s" | "m" | "h" | "d" | "w"];
  const seconds = Number(m[1]) * unit;
  return seconds > 0 && seconds <= 10 * 366 * 86400 ? seconds : undefined;
}
