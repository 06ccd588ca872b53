/**
 * The database a command reads must be there already: `payments`, `token
 * list|revoke`, `entitlements` and `backup` open CIDGATE_DB as it is, and a
 * mistyped path would otherwise become a new, empty database (and its folder)
 * that answers "no sales" as if that were true.
 */
import { existsSync } from "node:fs";

/** True (after one line on stderr) when CIDGATE_DB names no database file; `path` is shown as given. */
export function missingDatabase(who: string, path: string): boolean {
  if (path !== ":memory:" && existsSync(path)) return false;
  console.error(`${who}: no database at CIDGATE_DB (${path})`);
  return true;
}
