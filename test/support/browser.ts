/**
 * A real browser for page tests: Debian's chromium driven by playwright-core.
 *
 * Without chromium on the machine, a page test is skipped and says so loudly on
 * stderr; with CIDGATE_REQUIRE_SYSTEM_PARTS=1 (set by .ci/run) a missing browser
 * fails instead, so CI can never pass by skipping.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

/** The flags this machine needs: no sandbox as root, no GPU, no calls home. */
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
];

export function chromiumPath(): string | undefined {
  return CANDIDATES.find((p) => existsSync(p));
}

/** true when page tests can run; otherwise a loud line (or a throw under CI). */
export function browserAvailable(suite: string): boolean {
  if (chromiumPath()) return true;
  const message = `${suite}: SKIPPED, chromium is not installed (apt-get install chromium); CI installs it`;
  if (process.env.CIDGATE_REQUIRE_SYSTEM_PARTS === "1") throw new Error(message);
  console.error(`\n!!! ${message}\n`);
  return false;
}

export interface LaunchedBrowser {
  /** A persistent context: open pages with context.newPage(). */
  context: BrowserContext;
  close(): Promise<void>;
}

/** Launches chromium with a fresh user-data dir, removed on close. */
export async function launchBrowser(): Promise<LaunchedBrowser> {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error("chromium is not installed");
  const userDataDir = mkdtempSync(join(tmpdir(), "cidgate-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    args: CHROMIUM_FLAGS,
    acceptDownloads: true,
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
