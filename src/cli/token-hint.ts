/**
 * The `token create` command to print for a shop (the start-up hint, `cidgate
 * dev`): a token is signed with the secret in the database's folder and
 * recorded in that database, so a command that left out a CIDGATE_DB other
 * than the default would sign for another shop, whose tokens this one refuses.
 */
import { type Settings, selectsPostgres, VARIABLES } from "../settings";

export function tokenCreateCommand(settings: Pick<Settings, "db">, options: string): string {
  // A PostgreSQL URL may hold a password: never printed. The command needs this server's CIDGATE_DB
  // and JWT_SECRET (set for every replica), so it says to run it with the server's environment.
  if (selectsPostgres(settings.db))
    return `npx cidgate token create ${options} (with this server's CIDGATE_DB and JWT_SECRET)`;
  const db = settings.db === VARIABLES.db.default ? "" : `CIDGATE_DB=${settings.db} `;
  return `${db}npx cidgate token create ${options}`;
}
