/**
 * `cidgate doctor`: every setting as loaded, then every check start-up runs
 * (src/doctor/checks.ts), with the full `PRAGMA integrity_check` instead of
 * start-up's quick one. Exit 0 when nothing failed (warnings allowed), 1 on a
 * failed check, 2 on a bad setting. Run it after every change to `.env` or
 * the pricing, and before the first sale on mainnet (docs/mainnet.md).
 */
import { grid } from "../grid";
import { loadSettingsOrReport, type Settings, VARIABLES } from "../settings";
import { defineCommand } from "./command";

const MARK = { ok: "ok  ", warn: "WARN", fail: "FAIL" } as const;

function settingRows(settings: Settings, env: Record<string, string | undefined>): string[][] {
  return Object.entries(VARIABLES).map(([key, v]) => {
    const value = settings[key as keyof Settings];
    const given = (env[v.name] ?? "") !== "";
    const written = given
      ? (env[v.name] as string) // as written (ACCESS_TOKEN_TTL=24h, not 86400)
      : typeof v.default === "string"
        ? v.default
        : String(value);
    const shown =
      value === undefined
        ? "(unset)"
        : "secret" in v && v.secret
          ? "(set, hidden)"
          : "display" in v && v.display
            ? v.display(written) // an RPC URL's key stays out of the terminal and the ticket it is pasted in
            : written;
    return [v.name, shown, given ? "" : value === undefined ? "" : "(default)"];
  });
}

export const command = defineCommand({
  name: "doctor",
  summary:
    "check the settings, facilitator, RPC, relayer gas, USDC, disk, file modes and database (exit 1 on a failure)",
  notes: "The same checks run at start-up, which refuses to listen on a failure.",
  async run({ who }) {
    const env = process.env;
    const settings = loadSettingsOrReport(who, env);
    if (!settings) return 2;
    const { preflight } = await import("../startup/preflight"); // heavy: only when run, not for --help
    console.log("settings:");
    console.log(grid(settingRows(settings, env)));
    const p = await preflight(settings, env, "integrity_check");
    console.log("\nchecks:");
    console.log(grid(p.results.map((r) => [MARK[r.status], r.name, r.message])));
    if (p.pricing.result === "rejected") {
      console.log(`\npricing files rejected (nothing from them is for sale until fixed):`);
      for (const e of p.pricingErrors) console.log(`  ${e}`);
    }
    const failed = p.results.filter((r) => r.status === "fail").length;
    const warned = p.results.filter((r) => r.status === "warn").length;
    console.log(`\n${failed} failure(s), ${warned} warning(s)`);
    return failed > 0 ? 1 : 0;
  },
});
