/**
 * Settings from the environment (Bun reads `.env` by itself).
 *
 * VARIABLES below is the one table of them: the loaded object, its type, the
 * one-line reports and the README's settings table all come from it. The
 * variable names and defaults are a contract with deployment files: keep them.
 *
 * Every bad variable is reported at once (an operator fixing a deployment file
 * should not discover the errors one restart at a time), one line each, and a
 * secret's value is never echoed back, even a malformed one.
 */
import { getAddress, isAddress, isHex } from "viem";
import { displayUrl } from "./display-url";
import { parseTtl } from "./duration";

type Env = Record<string, string | undefined>;

/** Reads another variable as it would be used (its value, or its default): for defaults derived from others. */
type Lookup = (variable: string) => string | undefined;

/** A default, as written in the environment, or made from other variables. */
type Default = string | ((raw: Lookup) => string);

interface Variable<T, D extends Default | undefined> {
  /** The environment variable. */
  readonly name: string;
  /** One line for the README: what it is for. */
  readonly doc: string;
  /** The value when unset, written as it would be in the environment; undefined: the setting is optional. */
  readonly default?: D;
  /** How the default reads in the README, when it is not a plain value (or there is none). */
  readonly defaultDoc?: string;
  /** What the variable allows, for the report of a bad value. */
  readonly allows: string;
  /** Never echoed back in a report. */
  readonly secret?: boolean;
  /** How a value is echoed (in a report, in `doctor`) when it may hold a key in part: an RPC URL's path. */
  readonly display?: (text: string) => string;
  /** The value, or undefined when the text is not allowed. */
  readonly parse: (text: string) => T | undefined;
}

type AnyVariable = Variable<unknown, Default | undefined>;

function variable<T, const D extends Default | undefined = undefined>(v: Variable<T, D>) {
  return v;
}

const text = { allows: "any text", parse: (s: string) => s };

function wholeNumber(min: number, max: number) {
  return {
    allows: `a whole number from ${min} to ${max}`,
    parse: (s: string) => (/^\d+$/.test(s) && Number(s) >= min && Number(s) <= max ? Number(s) : undefined),
  };
}

/** Trailing slashes dropped, so paths can be appended. */
const httpUrl = {
  allows: "an http(s) URL",
  parse: (s: string) => (isHttpUrl(s) ? s.replace(/\/+$/, "") : undefined),
};

/** A URL that may carry an API key (Alchemy's, Infura's, a facilitator's): shown as its origin only. */
const keyedUrl = { ...httpUrl, display: displayUrl };

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}

/** On/off: true, 1, yes, on / false, 0, no, off (any case). */
const boolean = {
  allows: "true or false (also 1/0, yes/no, on/off)",
  parse: (s: string) => {
    const v = s.trim().toLowerCase();
    if (["true", "1", "yes", "on"].includes(v)) return true;
    if (["false", "0", "no", "off"].includes(v)) return false;
    return undefined;
  },
};

const address = {
  allows: "a 0x-prefixed 20-byte address",
  parse: (s: string) => (isAddress(s, { strict: false }) ? getAddress(s) : undefined),
};

/** pino's levels: anything else made pino throw a stack at start-up. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
const FACILITATOR_NETWORKS = ["base", "base-sepolia"] as const;

function oneOf<const V extends string>(values: readonly V[]) {
  return { allows: `one of ${values.join(", ")}`, parse: (s: string) => values.find((v) => v === s) };
}

/**
 * CIDGATE_DB names a PostgreSQL server (postgres:// or postgresql://) rather than a SQLite file:
 * Here, not in db/pg.ts: settings load for every command, the driver only for those that open it.
 */
export function selectsPostgres(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

export const VARIABLES = {
  port: variable({ name: "PORT", default: "4021", doc: "listen port", ...wholeNumber(0, 65535) }),
  host: variable({ name: "HOST", default: "127.0.0.1", doc: "listen address", ...text }),
  publicUrl: variable({
    name: "PUBLIC_URL",
    default: (raw: Lookup) => `http://${raw("HOST")!.includes(":") ? `[${raw("HOST")}]` : raw("HOST")}:${raw("PORT")}`,
    defaultDoc: "`http://HOST:PORT`",
    doc: "origin used in the 402's `resource` URLs (set it behind a proxy)",
    ...httpUrl,
  }),
  db: variable({
    name: "CIDGATE_DB",
    default: "data/cidgate.db",
    doc: "SQLite file (`:memory:` allowed), or a `postgres://` URL that several replicas share ([docs/scaling.md](docs/scaling.md))",
    // A PostgreSQL URL may carry the password: shown (doctor, reports) with its userinfo dropped.
    display: (s: string) => (selectsPostgres(s) ? displayUrl(s) : s),
    ...text,
  }),
  dataDir: variable({
    name: "CIDGATE_DATA_DIR",
    default: (raw: Lookup) =>
      raw("CIDGATE_DB") === ":memory:" || selectsPostgres(raw("CIDGATE_DB")!)
        ? "data"
        : raw("CIDGATE_DB")!.replace(/\/?[^/]*$/, "") || ".",
    defaultDoc: "the database file's folder (`data` with PostgreSQL)",
    doc: "where generated state (the JWT secret) is kept",
    ...text,
  }),
  configDir: variable({ name: "CIDGATE_CONFIG_DIR", default: "config", doc: "pricing YAML folder", ...text }),
  contentDir: variable({ name: "CIDGATE_CONTENT_DIR", default: "content", doc: "files to sell", ...text }),
  contentIndexDb: variable({
    name: "CONTENT_INDEX_DB",
    default: "data/content.db",
    doc: "PostgreSQL only: this replica's own index of its content folder (SQLite)",
    ...text,
  }),
  jwtSecret: variable({
    name: "JWT_SECRET",
    defaultDoc: "generated once into the data folder (SQLite only)",
    doc: "HS256 secret of management and access tokens (32+ characters); with PostgreSQL required, the same on every replica",
    secret: true,
    allows: "at least 32 characters",
    parse: (s) => (s.length >= 32 ? s : undefined),
  }),
  facilitatorUrl: variable({
    name: "FACILITATOR_URL",
    default: "https://x402.org/facilitator",
    doc: "an x402 facilitator, or `local` for the built-in one",
    allows: "an http(s) URL, or local",
    parse: (s) => (s === "local" || isHttpUrl(s) ? s : undefined),
    display: (s) => (s === "local" ? s : displayUrl(s)),
  }),
  facilitatorTimeoutMs: variable({
    name: "FACILITATOR_TIMEOUT_MS",
    default: "30000",
    doc: "bound on each facilitator call, in ms",
    ...wholeNumber(100, 600000),
  }),
  cdpApiKeyId: variable({
    name: "CDP_API_KEY_ID",
    defaultDoc: "none",
    doc: "Coinbase facilitator auth: key id",
    ...text,
  }),
  cdpApiKeySecret: variable({
    name: "CDP_API_KEY_SECRET",
    defaultDoc: "none",
    doc: "Coinbase facilitator auth: key secret",
    secret: true,
    ...text,
  }),
  maxTimeoutSeconds: variable({
    name: "MAX_TIMEOUT_SECONDS",
    default: "60",
    doc: "`maxTimeoutSeconds` in 402 bodies",
    ...wholeNumber(1, 86400),
  }),
  accessTokenTtlSeconds: variable({
    name: "ACCESS_TOKEN_TTL",
    default: "24h",
    doc: "lifetime of the access token a paid or entitled download carries (never past the entitlement)",
    allows: "a duration with a unit: 90s, 15m, 12h, 7d or 2w",
    parse: parseTtl,
  }),
  usdcAddressBase: variable({
    name: "USDC_ADDRESS_BASE",
    defaultDoc: "Circle's USDC",
    doc: "token address override on base, for a local chain",
    ...address,
  }),
  usdcAddressBaseSepolia: variable({
    name: "USDC_ADDRESS_BASE_SEPOLIA",
    defaultDoc: "Circle's USDC",
    doc: "token address override on base-sepolia, for a local chain",
    ...address,
  }),
  rpcUrl: variable({
    name: "RPC_URL",
    defaultDoc: "none",
    doc:
      "chain RPC: the built-in facilitator's, and the gateway's to confirm every remote facilitator's settlement " +
      "on chain and reconcile pending payments (set it with a remote facilitator too)",
    ...keyedUrl,
  }),
  rpcUrlBase: variable({
    name: "RPC_URL_BASE",
    defaultDoc: "`RPC_URL` when it is on base",
    doc: "the gateway's RPC for base, when it also sells on base-sepolia (read only: confirmations, reconciliation)",
    ...keyedUrl,
  }),
  rpcUrlBaseSepolia: variable({
    name: "RPC_URL_BASE_SEPOLIA",
    defaultDoc: "`RPC_URL` when it is on base-sepolia",
    doc: "the gateway's RPC for base-sepolia, when it also sells on base (read only)",
    ...keyedUrl,
  }),
  reconcileSeconds: variable({
    name: "RECONCILE_SECONDS",
    default: "30",
    doc: "how often pending and unconfirmed payments are resolved from the chain (and once at start)",
    ...wholeNumber(1, 86400),
  }),
  relayerPrivateKey: variable({
    name: "RELAYER_PRIVATE_KEY",
    defaultDoc: "none",
    doc: "key that pays gas for settlements (built-in facilitator)",
    secret: true,
    allows: "a 0x-prefixed 32-byte hex private key",
    parse: (s) => (isHex(s) && s.length === 66 ? s : undefined),
  }),
  facilitatorNetworks: variable({
    name: "FACILITATOR_NETWORKS",
    default: "base-sepolia",
    doc: "networks the built-in facilitator serves (`base`, `base-sepolia`)",
    allows: `a comma-separated list of ${FACILITATOR_NETWORKS.join(", ")}`,
    parse: (s) => {
      const names = s
        .split(",")
        .map((n) => n.trim())
        .filter(Boolean);
      const known = names.flatMap((n) => FACILITATOR_NETWORKS.filter((k) => k === n));
      return known.length === names.length ? Object.freeze(known) : undefined;
    },
  }),
  facilitatorPort: variable({
    name: "FACILITATOR_PORT",
    default: "4022",
    doc: "port of `cidgate facilitator`",
    ...wholeNumber(0, 65535),
  }),
  receiptTimeoutSeconds: variable({
    name: "RECEIPT_TIMEOUT_SECONDS",
    default: "30",
    doc: "bound on waiting for a settlement's receipt",
    ...wholeNumber(1, 3600),
  }),
  trustProxy: variable({
    name: "TRUST_PROXY",
    default: "false",
    doc: "behind a reverse proxy: trust its `X-Forwarded-For` (the client address is its last entry) and `X-Forwarded-Proto`; only when clients cannot reach cidgate directly",
    ...boolean,
  }),
  verifyFailuresPerMinute: variable({
    name: "VERIFY_FAILURES_PER_MINUTE",
    default: "60",
    doc: "payment proofs the facilitator refuses, at most, per client address and per payer in any minute; then 429",
    ...wholeNumber(1, 1_000_000),
  }),
  configSettleMs: variable({
    name: "CONFIG_SETTLE_MS",
    default: "2000",
    doc: "how long a pricing file that turned empty, unparsable or missing is taken as mid-save before its instructions go",
    ...wholeNumber(0, 600_000),
  }),
  logLevel: variable({
    name: "LOG_LEVEL",
    default: "info",
    doc: "pino level (`fatal` to `trace`, or `silent`); one JSON line per request, never a header",
    ...oneOf(LOG_LEVELS),
  }),
};

type Table = typeof VARIABLES;
type ValueOf<V> = V extends Variable<infer T, infer D> ? (undefined extends D ? T | undefined : T) : never;

/** The loaded settings: read-only, one field per row of VARIABLES. */
export type Settings = Readonly<{ [K in keyof Table]: ValueOf<Table[K]> }>;

/** One bad variable: `message` says what it allows (and the value, unless secret). */
export interface SettingsIssue {
  variable: string;
  message: string;
}

export class SettingsError extends Error {
  readonly issues: readonly SettingsIssue[];
  constructor(issues: readonly SettingsIssue[]) {
    super(issues.map((i) => `${i.variable}: ${i.message}`).join("\n"));
    this.name = "SettingsError";
    this.issues = issues;
  }
}

/** A rule across variables. Values that failed to parse are missing; their own report says why. */
export type SettingsRule = (s: Partial<Settings>) => SettingsIssue[];

/**
 * The self-hosted facilitator settles on chain itself: it cannot run without a
 * chain and a key that pays gas. `when` says who needs it, for the report.
 */
export function selfHostedFacilitatorIssues(s: Partial<Settings>, when: string): SettingsIssue[] {
  const issues: SettingsIssue[] = [];
  if (!s.rpcUrl) issues.push({ variable: "RPC_URL", message: `required ${when} (the chain to settle on)` });
  if (!s.relayerPrivateKey)
    issues.push({ variable: "RELAYER_PRIVATE_KEY", message: `required ${when} (the key that pays gas)` });
  return issues;
}

/** For callers that hold settings made by hand: throws SettingsError unless both are there. */
export function requireSelfHostedFacilitator(
  s: Settings,
  when: string,
): asserts s is Settings & { rpcUrl: string; relayerPrivateKey: `0x${string}` } {
  const issues = selfHostedFacilitatorIssues(s, when);
  if (issues.length > 0) throw new SettingsError(issues);
}

const RULES: SettingsRule[] = [
  (s) => (s.facilitatorUrl === "local" ? selfHostedFacilitatorIssues(s, "when FACILITATOR_URL=local") : []),
];

function given(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === "" ? undefined : v;
}

function byName(name: string): AnyVariable | undefined {
  return Object.values(VARIABLES as Record<string, AnyVariable>).find((v) => v.name === name);
}

/**
 * The settings, frozen. Throws one SettingsError listing every bad variable;
 * `rules` are checked after the table's own (e.g. a command that needs RPC_URL).
 */
export function loadSettings(env: Env = process.env, rules: readonly SettingsRule[] = []): Settings {
  const lookup: Lookup = (name) => {
    const d = byName(name)?.default;
    return given(env, name) ?? (typeof d === "function" ? d(lookup) : d);
  };
  const values: Record<string, unknown> = {};
  const issues: SettingsIssue[] = [];
  // A derived default (PUBLIC_URL from HOST and PORT) fails mostly because what it is made of
  // is bad: reported only when nothing else is, so the line points at the real culprit.
  const derivedIssues: SettingsIssue[] = [];
  for (const [key, v] of Object.entries(VARIABLES as Record<string, AnyVariable>)) {
    const raw = lookup(v.name);
    if (raw === undefined) {
      values[key] = undefined; // an optional setting left unset: present, as the type says
      continue;
    }
    const value = v.parse(raw);
    if (value !== undefined) {
      values[key] = value;
      continue;
    }
    const got = v.display ? v.display(raw) : JSON.stringify(raw);
    const issue = { variable: v.name, message: v.secret ? v.allows : `${v.allows} (got ${got})` };
    (given(env, v.name) === undefined ? derivedIssues : issues).push(issue);
  }
  if (issues.length === 0) issues.push(...derivedIssues);
  for (const rule of [...RULES, ...rules]) {
    for (const issue of rule(values as Partial<Settings>)) {
      // A value that failed to parse is already reported; "required" would only repeat it.
      if (!issues.some((i) => i.variable === issue.variable)) issues.push(issue);
    }
  }
  if (issues.length > 0) throw new SettingsError(issues);
  return Object.freeze(values) as Settings;
}

/**
 * Settings for a command or the server: on bad values, prints one line per
 * variable, `<who>: bad setting <VARIABLE>: <what it allows> (got "...")`, and
 * returns undefined (the caller exits 2).
 */
export function loadSettingsOrReport(
  who: string,
  env: Env = process.env,
  rules: readonly SettingsRule[] = [],
): Settings | undefined {
  try {
    return loadSettings(env, rules);
  } catch (e) {
    if (!(e instanceof SettingsError)) throw e;
    for (const i of e.issues) console.error(`${who}: bad setting ${i.variable}: ${i.message}`);
    return undefined;
  }
}

/** The README's settings table, rows only (test/settings.test.ts keeps the README in agreement). */
export function settingsTableRows(): string {
  return Object.values(VARIABLES as Record<string, AnyVariable>)
    .map((v) => `| \`${v.name}\` | ${v.defaultDoc ?? `\`${v.default}\``} | ${v.doc} |`)
    .join("\n");
}
