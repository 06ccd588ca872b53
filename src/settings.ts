/**
 * Settings from the environment (Bun reads `.env` by itself).
 * The variable names are a contract with deployment files: keep them.
 * A bad value throws a SettingsError whose message is one line naming the
 * variable and what it allows, so start-up can fail fast and legibly.
 */
import { getAddress, isAddress, isHex } from "viem";

export class SettingsError extends Error {
  constructor(variable: string, allowed: string, value?: string) {
    super(`${variable}: ${allowed}${value === undefined ? "" : ` (got "${value}")`}`);
    this.name = "SettingsError";
  }
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string, fallback: string): string {
  const v = env[name];
  return v === undefined || v === "" ? fallback : v;
}

function optional(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === "" ? undefined : v;
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new SettingsError(name, `a whole number from ${min} to ${max}`, raw);
  const n = Number(raw);
  if (n < min || n > max) throw new SettingsError(name, `a whole number from ${min} to ${max}`, raw);
  return n;
}

function address(env: Env, name: string): `0x${string}` | undefined {
  const raw = optional(env, name);
  if (raw === undefined) return undefined;
  if (!isAddress(raw, { strict: false })) throw new SettingsError(name, "a 0x-prefixed 20-byte address", raw);
  return getAddress(raw);
}

function url(env: Env, name: string, fallback: string): string {
  const raw = str(env, name, fallback);
  try {
    const u = new URL(raw);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error();
  } catch {
    throw new SettingsError(name, "an http(s) URL", raw);
  }
  return raw.replace(/\/+$/, "");
}

export function loadSettings(env: Env = process.env) {
  const port = int(env, "PORT", 4021, 0, 65535);
  const host = str(env, "HOST", "127.0.0.1");
  const db = str(env, "CIDGATE_DB", "data/cidgate.db");
  const facilitatorUrl = str(env, "FACILITATOR_URL", "https://x402.org/facilitator");
  if (facilitatorUrl !== "local") url(env, "FACILITATOR_URL", facilitatorUrl);

  const relayerKey = optional(env, "RELAYER_PRIVATE_KEY");
  if (relayerKey !== undefined && !(isHex(relayerKey) && relayerKey.length === 66)) {
    // Never echo a key back, even a malformed one.
    throw new SettingsError("RELAYER_PRIVATE_KEY", "a 0x-prefixed 32-byte hex private key");
  }
  // The in-process facilitator settles on chain itself: it cannot start without both.
  if (facilitatorUrl === "local" && optional(env, "RPC_URL") === undefined) {
    throw new SettingsError("RPC_URL", "required when FACILITATOR_URL=local (the chain to settle on)");
  }
  if (facilitatorUrl === "local" && relayerKey === undefined) {
    throw new SettingsError("RELAYER_PRIVATE_KEY", "required when FACILITATOR_URL=local (the key that pays gas)");
  }
  const jwtSecret = optional(env, "JWT_SECRET");
  if (jwtSecret !== undefined && jwtSecret.length < 32) {
    throw new SettingsError("JWT_SECRET", "at least 32 characters");
  }
  const networksRaw = str(env, "FACILITATOR_NETWORKS", "base-sepolia");
  const facilitatorNetworks = networksRaw.split(",").map((s) => s.trim()).filter(Boolean);
  for (const n of facilitatorNetworks) {
    if (n !== "base" && n !== "base-sepolia") {
      throw new SettingsError("FACILITATOR_NETWORKS", "a comma-separated list of base, base-sepolia", networksRaw);
    }
  }

  return {
    port,
    host,
    publicUrl: url(env, "PUBLIC_URL", `http://${host.includes(":") ? `[${host}]` : host}:${port}`),
    db,
    /** Where generated state (the JWT secret) lives: beside the database file. */
    dataDir: str(env, "CIDGATE_DATA_DIR", db === ":memory:" ? "data" : db.replace(/\/?[^/]*$/, "") || "."),
    configDir: str(env, "CIDGATE_CONFIG_DIR", "config"),
    contentDir: str(env, "CIDGATE_CONTENT_DIR", "content"),
    jwtSecret,
    facilitatorUrl,
    cdpApiKeyId: optional(env, "CDP_API_KEY_ID"),
    cdpApiKeySecret: optional(env, "CDP_API_KEY_SECRET"),
    maxTimeoutSeconds: int(env, "MAX_TIMEOUT_SECONDS", 60, 1, 86400),
    /** Bound on every call to the facilitator, in ms. */
    facilitatorTimeoutMs: int(env, "FACILITATOR_TIMEOUT_MS", 30000, 100, 600000),
    usdcAddressBase: address(env, "USDC_ADDRESS_BASE"),
    usdcAddressBaseSepolia: address(env, "USDC_ADDRESS_BASE_SEPOLIA"),
    /** Self-hosted facilitator (FACILITATOR_URL=local or `cidgate facilitator`). */
    rpcUrl: optional(env, "RPC_URL") === undefined ? undefined : url(env, "RPC_URL", ""),
    relayerPrivateKey: relayerKey as `0x${string}` | undefined,
    facilitatorNetworks: facilitatorNetworks as ("base" | "base-sepolia")[],
    facilitatorPort: int(env, "FACILITATOR_PORT", 4022, 0, 65535),
    receiptTimeoutSeconds: int(env, "RECEIPT_TIMEOUT_SECONDS", 30, 1, 3600),
    logLevel: str(env, "LOG_LEVEL", "info"),
  };
}

export type Settings = ReturnType<typeof loadSettings>;

/**
 * Settings for a command or the server: on a bad value, prints the one line
 * `<who>: bad setting <VARIABLE>: <allowed>` and returns undefined (the caller exits 2).
 */
export function loadSettingsOrReport(who: string, env: Env = process.env): Settings | undefined {
  try {
    return loadSettings(env);
  } catch (e) {
    if (!(e instanceof SettingsError)) throw e;
    console.error(`${who}: bad setting ${e.message}`);
    return undefined;
  }
}
