/**
 * `cidgate content add <file> [--as <path>]`: copies a file into the content
 * folder and prints its CID (only the CID on stdout, so it can be captured).
 * The copy is written under a hidden temporary name and renamed into place,
 * so a running server's watcher never indexes half a file; it then indexes
 * the file and re-applies pricing (`files:` globs) by itself.
 */
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { cidOfFile } from "../content/cid";
import { absoluteContentPath, contentRoot, relativePathProblem } from "../content/paths";
import { loadSettingsOrReport } from "../settings";
import { parseOptions } from "./args";

const USAGE = `usage: cidgate content add <file> [--as <path under the content folder>] [--force]
  copies <file> into CIDGATE_CONTENT_DIR (default ./content) and prints its CID
  --as     where to put it, e.g. articles/essay.md (default: the file's name)
  --force  replace a different file already at that path`;

export async function run(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined || sub === "help" || sub === "--help" || rest.includes("--help")) {
    console.log(USAGE);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== "add") {
    console.error(USAGE);
    return 2;
  }
  const { values, positionals: files, unknown } = parseOptions(rest, { as: "string", force: "boolean" });
  if (unknown !== undefined) {
    console.error(`cidgate content: unknown option ${unknown}\n${USAGE}`);
    return 2;
  }
  const { as, force = false } = values;
  if (files.length !== 1 || as === "") {
    console.error(USAGE);
    return 2;
  }
  const source = files[0];
  const settings = loadSettingsOrReport("cidgate content");
  if (!settings) return 2;
  let st;
  try {
    st = statSync(source);
  } catch {
    console.error(`cidgate content: ${source}: no such file`);
    return 1;
  }
  if (!st.isFile()) {
    console.error(`cidgate content: ${source}: not a regular file`);
    return 1;
  }
  const relative = (as ?? basename(source)).replace(/^\.\//, "");
  const problem = relativePathProblem(relative);
  if (problem) {
    console.error(`cidgate content: --as ${JSON.stringify(relative)} ${problem}`);
    return 2;
  }
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
      console.error(`cidgate content: ${join(settings.contentDir, relative)} exists with other contents (${existing}); use --force to replace it`);
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
    console.error(`cidgate content: could not copy into ${settings.contentDir}: ${(e as Error).message}`);
    return 1;
  }
  console.error(`added ${join(settings.contentDir, relative)} (${st.size} bytes)`);
  console.log(cid);
  return 0;
}
