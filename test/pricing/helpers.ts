/** Temporary config/content folders and settings for pricing tests. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { loadSettings } from "../../src/settings";

export const PAY_TO = "0x1111111111111111111111111111111111111111";
export const OTHER = "0x2222222222222222222222222222222222222222";
export const CID_A = "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e";
export const CID_B = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku";
export const CID_C = "QmWmRj3dFDZdb6ABvbmKhEL6TmPbAfBZ1t5BxsEyJrcZhE";
/** Base Sepolia USDC, the default asset. */
export const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";

export function tempDirs() {
  const base = mkdtempSync(join(tmpdir(), "cidgate-pricing-"));
  const configDir = join(base, "config");
  const contentDir = join(base, "content");
  mkdirSync(configDir, { recursive: true });
  mkdirSync(contentDir, { recursive: true });
  const settings = { ...loadSettings({}), configDir, contentDir, db: ":memory:" };
  return {
    base,
    configDir,
    contentDir,
    settings,
    write(rel: string, text: string, root = configDir) {
      mkdirSync(dirname(join(root, rel)), { recursive: true });
      writeFileSync(join(root, rel), text);
    },
    cleanup() {
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/** A YAML instruction block. */
export function instruction(
  key: string,
  opts: { name?: string; price?: string; cids?: string[]; files?: string[] } = {},
) {
  const lines = [
    `  ${key}:`,
    `    name: ${opts.name ?? key}`,
    "    payment_requirements:",
    `      - price: "${opts.price ?? "$0.01"}"`,
  ];
  if (opts.cids) lines.push("    cids:", ...opts.cids.map((c) => `      - ${c}`));
  if (opts.files) lines.push("    files:", ...opts.files.map((f) => `      - "${f}"`));
  return lines.join("\n");
}

export function pricingFile(...instructions: string[]) {
  return ["defaults:", "  network: base-sepolia", `  pay_to: "${PAY_TO}"`, "instructions:", ...instructions, ""].join(
    "\n",
  );
}
