/**
 * `cidgate content list`: every file in the content folder with its CID,
 * size, the instruction that prices it and the price in dollars, or
 * "not for sale": what a server started now would sell (src/catalog/open.ts;
 * the pricing files are read, never applied to a running shop's database).
 */

import { grid } from "../grid";
import { loadSettingsOrReport } from "../settings";
import { defineCommand } from "./command";

export const list = defineCommand({
  name: "content list",
  summary: "list the content folder: path, CID, size, the instruction that prices it, the price",
  options: {
    json: { type: "boolean", description: "one JSON array on stdout instead of the table" },
  },
  notes: "The content folder is CIDGATE_CONTENT_DIR, the pricing CIDGATE_CONFIG_DIR, the database CIDGATE_DB.",
  async run({ values, who }) {
    const settings = loadSettingsOrReport(who);
    if (!settings) return 2;
    // Loaded here, not at the top: `cidgate content add` shares this file's group and must stay quick.
    const [{ openShop }, { listContent }, { formatProblem }] = await Promise.all([
      import("../catalog/open"),
      import("../catalog/listing"),
      import("../pricing/load"),
    ]);
    const shop = await openShop(settings);
    try {
      for (const e of shop.unreadable)
        console.error(`${who}: ${settings.contentDir}/${e.path}: unreadable: ${e.message}`);
      if (shop.pricing.result === "rejected") {
        console.error(`${who}: the pricing files are rejected; prices below are the last good state a server applied:`);
        for (const e of shop.pricing.errors) console.error(`  ${formatProblem(e)}`);
      }
      const files = listContent(shop.files, shop.priced);
      if (values.json) {
        console.log(JSON.stringify(files, null, 2));
        return 0;
      }
      if (files.length === 0) {
        console.error(`no files in ${settings.contentDir}/; add one: npx cidgate content add <file>`);
        return 0;
      }
      console.log(
        grid(
          [
            ["path", "CID", "size", "instruction", "price"],
            ...files.map((f) => [
              f.path ?? "",
              f.cid,
              String(f.size ?? ""),
              f.instruction ? `${f.instruction.name} (${f.instruction.source})` : "-",
              f.price ?? "not for sale",
            ]),
          ],
          "",
        ),
      );
      return 0;
    } finally {
      shop.close();
    }
  },
});
