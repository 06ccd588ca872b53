import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadSettings, loadSettingsOrReport, SettingsError, settingsTableRows, VARIABLES } from "../src/settings";

/** The issues loadSettings reports for `env` (none: []). */
function issues(env: Record<string, string>) {
  try {
    loadSettings(env);
    return [];
  } catch (e) {
    expect(e).toBeInstanceOf(SettingsError);
    return [...(e as SettingsError).issues];
  }
}

/** What loadSettingsOrReport prints to stderr, and what it returns. */
function report(env: Record<string, string>) {
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => void lines.push(args.join(" "));
  try {
    return { result: loadSettingsOrReport("cidgate", env), lines };
  } finally {
    console.error = original;
  }
}

const KEY = `0x${"ab".repeat(32)}`;

describe("settings", () => {
  test("defaults match the documented contract", () => {
    const s = loadSettings({});
    expect(s.port).toBe(4021);
    expect(s.host).toBe("127.0.0.1");
    expect(s.publicUrl).toBe("http://127.0.0.1:4021");
    expect(s.db).toBe("data/cidgate.db");
    expect(s.dataDir).toBe("data");
    expect(s.configDir).toBe("config");
    expect(s.contentDir).toBe("content");
    expect(s.maxTimeoutSeconds).toBe(60);
    expect(s.facilitatorUrl).toBe("https://x402.org/facilitator");
    expect(s.facilitatorTimeoutMs).toBe(30000);
    expect(s.facilitatorNetworks).toEqual(["base-sepolia"]);
    expect(s.facilitatorPort).toBe(4022);
    expect(s.receiptTimeoutSeconds).toBe(30);
    expect(s.logLevel).toBe("info");
    for (const optional of [
      "jwtSecret",
      "cdpApiKeyId",
      "cdpApiKeySecret",
      "usdcAddressBase",
      "usdcAddressBaseSepolia",
      "rpcUrl",
      "relayerPrivateKey",
    ] as const) {
      expect(s[optional]).toBeUndefined();
    }
    expect(Object.keys(s)).toEqual(Object.keys(VARIABLES)); // every setting present, unset ones too
  });

  test("derived defaults and values as given", () => {
    expect(loadSettings({ HOST: "::1", PORT: "80" }).publicUrl).toBe("http://[::1]:80");
    expect(loadSettings({ CIDGATE_DB: "/srv/x/db.sqlite" }).dataDir).toBe("/srv/x");
    expect(loadSettings({ CIDGATE_DB: ":memory:" }).dataDir).toBe("data");
    expect(loadSettings({ CIDGATE_DB: "db.sqlite" }).dataDir).toBe(".");
    expect(loadSettings({ PUBLIC_URL: "https://gw.example.com//" }).publicUrl).toBe("https://gw.example.com");
    expect(loadSettings({ PORT: "" }).port).toBe(4021); // empty means unset
    expect(loadSettings({ FACILITATOR_NETWORKS: "base, base-sepolia" }).facilitatorNetworks).toEqual([
      "base",
      "base-sepolia",
    ]);
    expect(loadSettings({ USDC_ADDRESS_BASE: "0x5fbdb2315678afecb367f032d93f642f64180aa3" }).usdcAddressBase).toBe(
      "0x5FbDB2315678afecb367f032d93F642f64180aa3",
    );
  });

  test("a bad value names the variable and what is allowed", () => {
    expect(() => loadSettings({ PORT: "http" })).toThrow(SettingsError);
    expect(() => loadSettings({ PORT: "70000" })).toThrow(/^PORT: a whole number from 0 to 65535/);
    expect(() => loadSettings({ PUBLIC_URL: "nope" })).toThrow(/^PUBLIC_URL: an http\(s\) URL/);
    expect(() => loadSettings({ USDC_ADDRESS_BASE: "0x12" })).toThrow(/^USDC_ADDRESS_BASE:/);
    expect(() => loadSettings({ FACILITATOR_NETWORKS: "solana" })).toThrow(/^FACILITATOR_NETWORKS:/);
  });

  test("each variable with a rule reports a bad value as {variable, message}", () => {
    const bad: Record<string, string> = {
      PORT: "-1",
      PUBLIC_URL: "ftp://x",
      JWT_SECRET: "short",
      FACILITATOR_URL: "x402.org",
      FACILITATOR_TIMEOUT_MS: "50",
      MAX_TIMEOUT_SECONDS: "0",
      USDC_ADDRESS_BASE: "0x12",
      USDC_ADDRESS_BASE_SEPOLIA: "usdc",
      RPC_URL: "localhost:8545",
      RELAYER_PRIVATE_KEY: "0x12",
      FACILITATOR_NETWORKS: "base,solana",
      FACILITATOR_PORT: "4022.5",
      RECEIPT_TIMEOUT_SECONDS: "3601",
      LOG_LEVEL: "verbose",
    };
    for (const [variable, value] of Object.entries(bad)) {
      const found = issues({ [variable]: value });
      expect(found).toHaveLength(1);
      expect(found[0].variable).toBe(variable);
      expect(found[0].message.length).toBeGreaterThan(0);
    }
    // All of them at once: every one reported, in the table's order, nothing else.
    const all = issues(bad).map((i) => i.variable);
    expect(all).toEqual(
      Object.values(VARIABLES)
        .map((v) => v.name)
        .filter((n) => n in bad),
    );
  });

  test("LOG_LEVEL takes pino's levels only", () => {
    for (const level of ["fatal", "error", "warn", "info", "debug", "trace", "silent"]) {
      expect(loadSettings({ LOG_LEVEL: level }).logLevel).toBe(level as never);
    }
    expect(issues({ LOG_LEVEL: "verbose" })).toEqual([
      { variable: "LOG_LEVEL", message: 'one of fatal, error, warn, info, debug, trace, silent (got "verbose")' },
    ]);
    expect(issues({ LOG_LEVEL: "INFO" })).toHaveLength(1);
  });

  test("secrets are never echoed, even malformed", () => {
    for (const env of [{ RELAYER_PRIVATE_KEY: "0xdeadbeef" }, { JWT_SECRET: "deadbeef" }] as Record<string, string>[]) {
      const { result, lines } = report(env);
      expect(result).toBeUndefined();
      expect(lines).toHaveLength(1);
      expect(lines[0]).not.toContain("deadbeef");
      expect(lines[0]).not.toContain("got");
    }
  });

  test("FACILITATOR_URL=local needs RPC_URL and RELAYER_PRIVATE_KEY, both reported", () => {
    expect(issues({ FACILITATOR_URL: "local" }).map((i) => i.variable)).toEqual(["RPC_URL", "RELAYER_PRIVATE_KEY"]);
    expect(issues({ FACILITATOR_URL: "local", RPC_URL: "http://127.0.0.1:8545" })).toEqual([
      { variable: "RELAYER_PRIVATE_KEY", message: "required when FACILITATOR_URL=local (the key that pays gas)" },
    ]);
    // A malformed RPC_URL is reported once, as malformed, not also as missing (not echoed: it may hold a key).
    expect(
      issues({ FACILITATOR_URL: "local", RPC_URL: "nope", RELAYER_PRIVATE_KEY: KEY }).map((i) => i.message),
    ).toEqual(["an http(s) URL (got …)"]);
    const s = loadSettings({ FACILITATOR_URL: "local", RPC_URL: "http://127.0.0.1:8545/", RELAYER_PRIVATE_KEY: KEY });
    expect(s.rpcUrl).toBe("http://127.0.0.1:8545");
    expect(s.relayerPrivateKey).toBe(KEY as `0x${string}`);
  });

  test("a bad HOST or PORT is reported as itself, not through the PUBLIC_URL made from it", () => {
    expect(issues({ PORT: "eighty" }).map((i) => i.variable)).toEqual(["PORT"]);
    // Nothing else wrong: the derived default itself is the report.
    expect(issues({ HOST: "a b" }).map((i) => i.variable)).toEqual(["PUBLIC_URL"]);
  });

  test("the report: one line per bad variable, no stack, nothing returned", () => {
    const { result, lines } = report({ PORT: "eighty", LOG_LEVEL: "verbose", JWT_SECRET: "x" });
    expect(result).toBeUndefined();
    expect(lines).toEqual([
      'cidgate: bad setting PORT: a whole number from 0 to 65535 (got "eighty")',
      "cidgate: bad setting JWT_SECRET: at least 32 characters",
      'cidgate: bad setting LOG_LEVEL: one of fatal, error, warn, info, debug, trace, silent (got "verbose")',
    ]);
    expect(lines.join("\n")).not.toMatch(/\n\s+at /);
  });

  test("the settings are frozen", () => {
    const s = loadSettings({});
    expect(Object.isFrozen(s)).toBe(true);
    expect(Object.isFrozen(s.facilitatorNetworks)).toBe(true);
    expect(() => {
      (s as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  test("the README's settings table is the table in src/settings.ts (bun scripts/settings-table.ts)", () => {
    const readme = readFileSync(join(import.meta.dir, "../README.md"), "utf8");
    expect(readme).toContain(settingsTableRows());
  });
});
