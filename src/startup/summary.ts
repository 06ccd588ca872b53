/**
 * The start-up summary `npm start` (and `cidgate dev`) prints once listening:
 * where it listens and where buyers reach it, which facilitator settles which
 * networks, the RPC, the pricing files read, the checks, and a table of what
 * is for sale with each file's URL. When nothing is for sale it says why and
 * gives the one command that fixes it: a first run that sells nothing must
 * not look like one that works.
 */
import type { ListedFile } from "../catalog/listing";
import { canonicalNetwork, networkByChainId } from "../chain/networks";
import { displayUrl } from "../display-url";
import { grid } from "../grid";
import { type Settings, selectsPostgres } from "../settings";
import type { Preflight } from "./preflight";

export interface SummaryInput {
  version: string;
  /** Where the server listens. */
  url: string;
  /** Where buyers reach it (the origin of every 402's resource). */
  publicUrl: string;
  settings: Settings;
  preflight: Preflight;
  forSale: readonly ListedFile[];
}

const PAY_TO_UNSET = /environment variable (\w+) is not set/;

function facilitatorLine(s: Settings, p: Preflight): string {
  const who = s.facilitatorUrl === "local" ? "built-in (FACILITATOR_URL=local)" : displayUrl(s.facilitatorUrl);
  const supported = p.facts.supported;
  if ("error" in supported) return `${who}, not answering: ${supported.error}`;
  // Kinds come once per x402 version (v1 names, v2 CAIP-2 ids): one name per network.
  const networks = [
    ...new Set(
      supported.value.filter((k) => k.scheme === "exact").map((k) => canonicalNetwork(k.network) ?? k.network),
    ),
  ];
  const relayer = p.facts.relayer ? `; relayer ${p.facts.relayer.address}` : "";
  return `${who}, settles ${networks.join(", ") || "nothing"}${relayer}`;
}

/** Each RPC set, as the checks found it; its URL without what may be a key (the journal keeps this). */
function rpcLine(p: Preflight): string {
  if (p.facts.rpcs.length === 0) return "none (RPC_URL, RPC_URL_BASE, RPC_URL_BASE_SEPOLIA unset)";
  return p.facts.rpcs
    .map((r) => {
      const who = `${displayUrl(r.url)}${r.variable === "RPC_URL" ? "" : ` (${r.variable})`}`;
      const id = r.chainId;
      if ("error" in id) return `${who}, not answering: ${id.error}`;
      return `${who}, chain ${id.value} (${networkByChainId(id.value) ?? "unknown"})`;
    })
    .join("; ");
}

function pricingLine(s: Settings, p: Preflight): string {
  const r = p.pricing;
  if (r.files.length === 0) return `no pricing files in ${s.configDir}/`;
  const files = r.files.map((f) => `${s.configDir}/${f}`).join(", ");
  if (r.result === "rejected") return `${files}: rejected, ${r.errors.length} error(s)`;
  return `${files} (${r.instructions} instruction(s), ${r.cids} CID(s))`;
}

/** Why nothing is for sale, and the one command that fixes it. */
export function nothingForSale(s: Settings, p: Preflight): string[] {
  const lines = ["nothing is for sale:"];
  const r = p.pricing;
  if (r.result === "rejected") {
    lines.push(...p.pricingErrors.map((e) => `  ${e}`));
    const unset = p.pricingErrors.map((e) => PAY_TO_UNSET.exec(e)?.[1]).find(Boolean);
    if (unset === "PAY_TO")
      lines.push(
        "PAY_TO is the wallet the pricing pays. Fix: PAY_TO=0xYourWallet npm start",
        "(or try a whole local shop, chain and buyer included: npx cidgate dev)",
      );
    else if (unset) lines.push(`Fix: ${unset}=<value> npm start (or put it in .env)`);
    else lines.push(`Fix the lines above; npx cidgate config check ${s.configDir} shows them again`);
    return lines;
  }
  if (r.files.length === 0 || r.instructions === 0) {
    lines.push(
      `  no instruction in ${s.configDir}/ prices anything (docs/pricing.md).`,
      `Fix: npx cidgate content add <file>, then give it a price in ${s.configDir}/pricing.yaml (docs/pricing.md)`,
    );
    return lines;
  }
  lines.push(
    `  the pricing's files: globs match no file in ${s.contentDir}/ and it lists no cids:`,
    `Fix: npx cidgate content add <file> --as <path a glob matches>   (npx cidgate content list shows what is there)`,
  );
  return lines;
}

export function startupSummary(i: SummaryInput): string {
  const { settings: s, preflight: p } = i;
  const lines = [
    `cidgate ${i.version} listening on ${i.url}${i.publicUrl === i.url ? "" : `; buyers use ${i.publicUrl}`}`,
    grid(
      [
        ["facilitator", facilitatorLine(s, p)],
        ["RPC", rpcLine(p)],
        ["pricing", pricingLine(s, p)],
        ["content", `${s.contentDir}/`],
        [
          "database",
          selectsPostgres(s.db)
            ? `PostgreSQL ${displayUrl(s.db)} (this replica's content index: ${s.contentIndexDb})`
            : s.db,
        ],
      ],
      "",
    ),
  ];
  const warnings = p.results.filter((r) => r.status === "warn");
  const ok = p.results.filter((r) => r.status === "ok").length;
  lines.push(`checks       ${ok} ok, ${warnings.length} warning(s) (npx cidgate doctor shows each)`);
  for (const w of warnings) lines.push(`  warning: ${w.name}: ${w.message}`);
  if (i.forSale.length === 0) {
    lines.push(...nothingForSale(s, p));
  } else {
    lines.push(`for sale (${i.forSale.length}):`);
    lines.push(
      grid([
        ["name", "price", "CID", "URL"],
        ...i.forSale.map((f) => [
          f.instruction?.name ?? "",
          f.price ?? "",
          f.cid,
          f.path === undefined
            ? `(no file with this CID in ${s.contentDir}/: 404)`
            : `${i.publicUrl}/x402/cid/${f.cid}`,
        ]),
      ]),
    );
  }
  return lines.join("\n");
}
