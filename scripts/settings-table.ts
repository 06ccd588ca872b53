/** Prints the rows of the README's settings table, from the one table in src/settings.ts. */
import { settingsTableRows } from "../src/settings";

console.log(settingsTableRows());
