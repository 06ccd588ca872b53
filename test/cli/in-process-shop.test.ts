/**
 * `content list`, `payments` and `doctor` run in this process, for what
 * coverage sees (test/cli/shop.test.ts runs them as the real `cidgate` on a
 * real chain): what they print from a shop set up through the stores, and
 * their exit codes.
 */
import { afterEach, beforeEach, describe, expect, spyOn, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { command as content } from "../../src/cli/content";
import { command as doctor } from "../../src/cli/doctor";
import { command as payments } from "../../src/cli/payments";
import { cidOfBytes } from "../../src/content/cid";
import { openDb } from "../../src/db/client";
import { createPaymentStore } from "../../src/ledger/store";
import { instruction, pricingFile } from "../pricing/helpers";

const SECRET = "in-process-shop-secret-in-process-shop-01";
let dir: string;
let out: string[];
let err: string[];
const saved: Record<string, string | undefined> = {};

/** A port nothing listens on: the facilitator there never answers. */
function deadUrl(): string {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const url = `http://127.0.0.1:${s.port}`;
  s.stop(true);
  return url;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cidgate-cli-shop-"));
  mkdirSync(join(dir, "content", "articles"), { recursive: true });
  mkdirSync(join(dir, "config"));
  out = [];
  err = [];
  spyOn(console, "log").mockImplementation((...a: unknown[]) => void out.push(a.join(" ")));
  spyOn(console, "error").mockImplementation((...a: unknown[]) => void err.push(a.join(" ")));
  const env: Record<string, string | undefined> = {
    JWT_SECRET: SECRET,
    CIDGATE_CONTENT_DIR: join(dir, "content"),
    CIDGATE_CONFIG_DIR: join(dir, "config"),
    CIDGATE_DB: join(dir, "data", "cidgate.db"),
    FACILITATOR_URL: deadUrl(),
    FACILITATOR_TIMEOUT_MS: "2000",
    HOST: undefined,
    PUBLIC_URL: undefined,
    RPC_URL: undefined,
  };
  for (const [k, v] of Object.entries(env)) {
    saved[k] = process.env[k];
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});
afterEach(() => {
  (console.log as unknown as { mockRestore(): void }).mockRestore();
  (console.error as unknown as { mockRestore(): void }).mockRestore();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(dir, { recursive: true, force: true });
});

const ESSAY = "an essay\n";

function priceTheEssay() {
  writeFileSync(join(dir, "content", "articles", "essay.md"), ESSAY);
  writeFileSync(join(dir, "content", "free.txt"), "free\n");
  writeFileSync(
    join(dir, "config", "shop.yaml"),
    pricingFile(instruction("essay", { name: "The essay", price: "$0.25", files: ["articles/*.md"] })),
  );
}

describe("content list", () => {
  test("each file with CID, size, instruction and price; an unpriced one says so", async () => {
    priceTheEssay();
    expect(await content.main(["list"])).toBe(0);
    const cid = (await cidOfBytes(new TextEncoder().encode(ESSAY))).toString();
    const text = out.join("\n");
    expect(text).toMatch(
      new RegExp(`articles/essay\\.md +${cid} +9 +The essay \\(shop\\.yaml#essay\\) +\\$0\\.25 on base-sepolia`),
    );
    expect(text).toMatch(/free\.txt +\S+ +5 +- +not for sale/);
  });

  test("--json: the same rows as data", async () => {
    priceTheEssay();
    expect(await content.main(["list", "--json"])).toBe(0);
    const rows = JSON.parse(out.join("\n"));
    expect(rows.map((r: { path: string; price?: string }) => [r.path, r.price])).toEqual([
      ["articles/essay.md", "$0.25 on base-sepolia"],
      ["free.txt", undefined],
    ]);
  });
});

describe("payments", () => {
  function sell(db: ReturnType<typeof openDb>, n: number, amount: string, network: string) {
    const store = createPaymentStore(db);
    const claimed = store.claim({
      network,
      asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
      payer: "0x5555555555555555555555555555555555555abc",
      nonce: `0x${n.toString(16).padStart(64, "0")}`,
      cid: "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e",
      instructionId: "0190a000-0000-7000-8000-000000000001",
      instructionVersion: 1,
      amount,
      payTo: "0x6135561038E7C676473431842e586C8248276AED",
      validBefore: 4_000_000_000n,
      x402Version: 1,
      proofHash: `h${n}`,
    });
    if (!claimed.claimed) throw new Error("not claimed");
    store.markSettled(claimed.payment.id, `0x${"ab".repeat(32)}`);
  }

  test("no sales: one line, exit 0", async () => {
    // An empty ledger as the server leaves it (a database that is not there is refused: database-path.test.ts).
    openDb(process.env.CIDGATE_DB!).sqlite.close();
    expect(await payments.main([])).toBe(0);
    expect(out).toEqual(["no sales in the last 30 day(s)"]);
  });

  test("sales in dollars, per day and per network, total; --limit shortens the list, not the totals", async () => {
    const db = openDb(process.env.CIDGATE_DB!);
    sell(db, 1, "10000", "base-sepolia");
    sell(db, 2, "250000", "base-sepolia");
    sell(db, 3, "1000000", "base");
    db.sqlite.close();
    expect(await payments.main(["--limit", "2"])).toBe(0);
    const text = out.join("\n");
    expect(text).toContain("recent sales (2 of 3 in the last 30 day(s)):");
    expect(text).toMatch(/per network:\n.*\n +base +1 +\$1\.00\n +base-sepolia +2 +\$0\.26/);
    expect(text).toContain("total: 3 sale(s), $1.26");
  });

  test("a bad --days is a usage error", async () => {
    expect(await payments.main(["--days", "0"])).toBe(2);
    expect(err[0]).toContain("--days: a whole number from 1");
  });
});

describe("doctor", () => {
  test("nothing priced and the facilitator down: a warning, exit 0", async () => {
    expect(await doctor.main([])).toBe(0);
    const text = out.join("\n");
    expect(text).toMatch(/JWT_SECRET +\(set, hidden\)/);
    expect(text).not.toContain(SECRET);
    expect(text).toMatch(/WARN +facilitator +http:\/\/127\.0\.0\.1:\d+ did not answer GET \/supported/);
    expect(text).toMatch(/ok +database integrity +ok/);
  });

  test("something priced and the facilitator down: a failure, exit 1", async () => {
    priceTheEssay();
    expect(await doctor.main([])).toBe(1);
    expect(out.join("\n")).toMatch(/FAIL +facilitator .*base-sepolia cannot be settled/);
  });

  test("HOST=0.0.0.0 without PUBLIC_URL: a failure naming both", async () => {
    process.env.HOST = "0.0.0.0";
    expect(await doctor.main([])).toBe(1);
    expect(out.join("\n")).toMatch(/FAIL +public URL +HOST=0\.0\.0\.0 .* PUBLIC_URL is unset/);
  });
});
