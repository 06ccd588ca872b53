/**
 * The `token create` command to print for a shop (the start-up hint, `cidgate
 * dev`): a token is signed with the secret in the database's folder and
 * recorded in that database, so a command that left out a CIDGATE_DB other
 * than the default would sign for another shop, whose tokens this one refuses.
 */
import { type Settings, VARIABLES } from "../settings";

export function tokenCreateCommand(settings: Pick<Settings, "db">, options: string): string {
  const db = settings.db === VARIABLES.db.default ? "" : `CIDGATE_DB=${settings.db} `;
  return `${db}npx cidgate token create ${options}`;
}
