/**
 * deploy/cidgate.service: systemd's own checker accepts it (where
 * systemd-analyze exists), and it keeps the promises docs/deploy.md makes:
 * its own user, a read-only system, one writable data folder, no new
 * privileges, restart on failure, bun run directly so SIGTERM reaches the server.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemPart } from "../support/system-parts";

const ROOT = join(import.meta.dir, "../..");
const UNIT = readFileSync(join(ROOT, "deploy/cidgate.service"), "utf8");
// systemd's checker comes with systemd; CI containers may have none, and it is not what .ci/run installs.
const analyze = systemPart("systemd-analyze", "deploy/cidgate.service", {
  ciInstalls: false,
  install: "it comes with systemd",
});

/** `systemd-analyze verify` on the unit with /opt/cidgate pointing at this checkout (so ExecStart exists). */
function verify(text: string) {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-unit-"));
  try {
    const file = join(dir, "cidgate.service");
    writeFileSync(file, text.replaceAll("/opt/cidgate", ROOT));
    const p = Bun.spawnSync([analyze!, "verify", file], { stdout: "pipe", stderr: "pipe" });
    return { code: p.exitCode, out: `${p.stdout}${p.stderr}`.trim() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const directives = (text: string) =>
  text
    .split("\n")
    .filter((l) => /^[A-Za-z]+=/.test(l))
    .map((l) => l.trim());

describe("deploy/cidgate.service", () => {
  test("has its own user, ProtectSystem=strict, a writable data folder only, NoNewPrivileges, restart on failure", () => {
    const d = directives(UNIT);
    for (const line of [
      "User=cidgate",
      "Group=cidgate",
      "ProtectSystem=strict",
      "ReadWritePaths=/var/lib/cidgate",
      "NoNewPrivileges=yes",
      "Restart=on-failure",
      "Environment=CIDGATE_DB=/var/lib/cidgate/cidgate.db",
      "ExecStart=/opt/cidgate/node_modules/.bin/bun src/index.ts",
      "KillSignal=SIGTERM",
    ]) {
      expect(d).toContain(line);
    }
    // The stop timeout outlasts the server's default drain (2 x 30 s facilitator timeout + 1 s).
    const stopSec = Number(/^TimeoutStopSec=(\d+)$/m.exec(UNIT)?.[1]);
    expect(stopSec).toBeGreaterThan(61);
  });

  test.skipIf(!analyze)("systemd-analyze verify accepts it with no warning, and does flag a broken copy", () => {
    expect(verify(UNIT)).toEqual({ code: 0, out: "" });
    const broken = verify(UNIT.replace("ProtectSystem=strict", "ProtectSystem=very"));
    expect(broken.out).toContain("Failed to parse protect system value");
  });

  test("deploy/cidgate-cli is valid sh and gives commands the service's data paths", () => {
    const cli = readFileSync(join(ROOT, "deploy/cidgate-cli"), "utf8");
    expect(Bun.spawnSync(["sh", "-n", join(ROOT, "deploy/cidgate-cli")]).exitCode).toBe(0);
    const fromUnit = [...UNIT.matchAll(/^Environment=(CIDGATE_\w+=\S+)$/gm)].map((m) => m[1]);
    expect(fromUnit.length).toBe(3);
    for (const line of fromUnit) expect(cli).toContain(`\n${line}\n`);
    expect(cli).toContain("sudo -E -u cidgate /opt/cidgate/node_modules/.bin/bun /opt/cidgate/src/cli/main.ts");
  });
});
