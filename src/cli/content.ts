/**
 * `cidgate content add|list`. `content add <file> [--as <path>]` copies a file into the content
 * folder and prints its CID (only the CID on stdout, so it can be captured).
 * The copy is written under a hidden temporary name and renamed into place,
 * so a running server's watcher never indexes half a file; it then indexes
 * the file and re-applies pricing (`files:` globs) by itself.
 * `content list` is in content-list.ts.
 */
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { cidOfFile } from "../content/cid";
import { absoluteContentPath, contentRoot, relativePathProblem } from "../content/paths";
import { loadSettingsOrReport } from "../settings";
import { defineCommand, defineGroup, UsageError } from "./command";
import { list } from "./content-list";

const add = defineCommand({
  name: "content add",
  summary: "copy a file into the content folder and print its CID (only the CID on stdout)",
  arguments: [{ name: "file", description: "the file to copy in" }],
  options: {
    as: {
      type: "string",
      value: "<path>",
      description: "where to put it under the content folder, e.g. articles/essay.md (default: the file's name)",
    },
    force: { type: "boolean", description: "replace a different file already at that path" },
  },
  notes: "The content folder is CIDGATE_CONTENT_DIR (default ./content).",
  async run({ values: { as, force = false }, positionals: [source], who }) {
    const settings = loadSettingsOrReport(who);
    if (!settings) return 2;
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(source);
    } catch {
      console.error(`${who}: ${source}: no such file`);
      return 1;
    }
    if (!st.isFile()) {
      console.error(`${who}: ${source}: not a regular file`);
      return 1;
    }
    const relative = (as ?? basename(source)).replace(/^\.\//, "");
    const problem = relativePathProblem(relative);
    if (problem) throw new UsageError(`--as ${JSON.stringify(relative)} ${problem}`);
    const root = contentRoot(settings.contentDir);
    const target = absoluteContentPath(root, relative);
    const cid = (await cidOfFile(source)).toString();
    if (existsSync(target)) {
      const existing = (await cidOfFile(target)).toString();
      if (existing === cid) {
        console.error(`${join(settings.contentDir, relative)} already holds this file`);
        console.log(cid);
        return 0;
      }
      if (!force) {
        console.error(
          `${who}: ${join(settings.contentDir, relative)} exists with other contents (${existing}); use --force to replace it`,
        );
        return 1;
      }
    }
    mkdirSync(dirname(target), { recursive: true });
    const temp = join(dirname(target), `.${basename(target)}.${process.pid}.tmp`);
    try {
      copyFileSync(source, temp);
      renameSync(temp, target);
    } catch (e) {
      rmSync(temp, { force: true });
      console.error(`${who}: could not copy into ${settings.contentDir}: ${(e as Error).message}`);
      return 1;
    }
    console.error(`added ${join(settings.contentDir, relative)} (${st.size} bytes)`);
    console.log(cid);
    return 0;
  },
});

export const command = defineGroup("content", "the files for sale", [add, list]);
