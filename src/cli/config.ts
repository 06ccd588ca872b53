/**
 * `cidgate config check [dir]`: validates the pricing files exactly as the
 * server would (same loader, same messages), without a server or database,
 * so a creator's CI can refuse a broken push. `files:` entries are resolved
 * against the content folder (CIDGATE_CONTENT_DIR, or --content).
 * Exit 0 when valid, 1 with every problem on stderr, 2 on bad usage.
 */
import { createContentStore } from "../content/store";
import { createCatalogChanges } from "../db/changes";
import { openDb } from "../db/client";
import { formatProblem, loadPricing } from "../pricing/load";
import { loadSettingsOrReport } from "../settings";
import { defineCommand } from "./command";

export const command = defineCommand({
  name: "config check",
  summary: "validate the pricing files as the server would (exit 1 with every problem)",
  arguments: [
    { name: "dir", optional: true, description: "pricing folder (default: CIDGATE_CONFIG_DIR, or ./config)" },
  ],
  options: {
    content: {
      type: "string",
      value: "<dir>",
      description: "content folder that files: entries match (default: CIDGATE_CONTENT_DIR, or ./content)",
    },
  },
  async run({ values, positionals, who }) {
    const settings = loadSettingsOrReport(who);
    if (!settings) return 2;
    const configDir = positionals[0] ?? settings.configDir;
    const contentDir = values.content ?? settings.contentDir;

    // A throwaway index: hashing here never touches the server's database.
    const db = openDb(":memory:");
    const content = createContentStore(db, { contentDir }, createCatalogChanges());
    const indexed = await content.index();
    for (const e of indexed.errors) console.error(`${contentDir}/${e.path}: unreadable: ${e.message}`);
    const loaded = loadPricing({ configDir, settings, env: process.env, content: content.list() });
    db.sqlite.close();

    for (const w of loaded.warnings) console.error(`warning: ${formatProblem(w)}`);
    for (const e of loaded.errors) console.error(formatProblem(e));
    if (loaded.errors.length > 0) {
      console.error(`${who}: ${loaded.errors.length} error(s) in ${configDir}; nothing would be applied`);
      return 1;
    }
    const cids = loaded.instructions.reduce((n, i) => n + i.cids.length, 0);
    console.log(
      `${configDir}: OK — ${loaded.files.length} file(s), ${loaded.instructions.length} instruction(s), ${cids} CID(s)`,
    );
    return 0;
  },
});
