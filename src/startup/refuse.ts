/**
 * Start-up's verdict on the checks: the failures, one line each, on stderr,
 * and whether to refuse. Shared by `npm start` and `cidgate dev`.
 */
import { failures } from "../doctor/checks";
import type { Preflight } from "./preflight";

/** Prints why and returns true when start-up must not go on. */
export function refusesToStart(who: string, p: Preflight): boolean {
  const failed = failures(p.results);
  for (const f of failed) console.error(`${who}: refusing to start: ${f.name}: ${f.message}`);
  if (failed.length > 0) console.error(`${who}: npx cidgate doctor runs every check again`);
  return failed.length > 0;
}
