/**
 * Tests that drive a system program (caddy, systemd-analyze, PostgreSQL) find
 * it here. Missing: the test is skipped and says so loudly on stderr. For the
 * parts .ci/run installs (`ciInstalls`), CIDGATE_REQUIRE_SYSTEM_PARTS=1 makes a
 * missing one fail instead, so CI can never pass by skipping (as
 * test/support/browser.ts does for chromium).
 *
 * `locate` replaces the PATH lookup for parts installed off PATH (Debian puts
 * PostgreSQL's initdb and postgres in /usr/lib/postgresql/<version>/bin).
 */
export function systemPart(
  program: string,
  suite: string,
  opts: { ciInstalls: boolean; install: string; locate?: () => string | undefined },
): string | undefined {
  const path = (opts.locate ? opts.locate() : Bun.which(program)) ?? undefined;
  if (path) return path;
  const message = `${suite}: SKIPPED, ${program} is not installed (${opts.install})`;
  if (opts.ciInstalls && process.env.CIDGATE_REQUIRE_SYSTEM_PARTS === "1") throw new Error(message);
  console.error(`\n!!! ${message}\n`);
  return undefined;
}
