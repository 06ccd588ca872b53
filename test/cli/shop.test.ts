/**
 * The first run, as a new user meets it, on a real local chain: `cidgate dev`
 * (chain, built-in facilitator, example pricing) and the buyer command it
 * prints, which pays with x402-fetch; `cidgate payments` and `content list`
 * on what that left; `cidgate doctor` passing and failing on real facts;
 * start-up's summary and its refusals; and `npm start` stopping when its own
 * PID is signalled. Every process is the real entry point.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Elysia } from "elysia";
import { generatePrivateKey } from "viem/accounts";
import { type Devnet, startDevnet } from "../../src/chain/devnet";
import { cidOfFile } from "../../src/content/cid";
import { openDb } from "../../src/db/client";
import { createLocalFacilitator } from "../../src/facilitator/local";
import { facilitatorModule } from "../../src/facilitator/routes";
import { alive, waitGone } from "../support/process";

const ROOT = join(import.meta.dir, "../..");
const MAIN = join(ROOT, "src/cli/main.ts");
const INDEX = join(ROOT, "src/index.ts");
const ARTICLE = join(ROOT, "content/articles/why-pay-per-file.md");
const SECRET = "shop-test-secret-shop-test-secret-0123456789";

let devnet: Devnet;
let dir: string;

beforeAll(async () => {
  devnet = await startDevnet({ buyers: 1 });
  dir = mkdtempSync(join(tmpdir(), "cidgate-shop-"));
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The example shop's settings, on the shared devnet, with a database of its own. */
function shopEnv(name: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? dir,
    CIDGATE_DB: join(dir, name, "cidgate.db"),
    CIDGATE_CONFIG_DIR: join(ROOT, "config"),
    CIDGATE_CONTENT_DIR: join(ROOT, "content"),
    JWT_SECRET: SECRET,
    PORT: "0",
    HOST: "127.0.0.1",
    FACILITATOR_URL: "local",
    RPC_URL: devnet.rpcUrl,
    RELAYER_PRIVATE_KEY: devnet.relayer.privateKey,
    USDC_ADDRESS_BASE_SEPOLIA: devnet.token,
    PAY_TO: devnet.seller.address,
    LOG_LEVEL: "info",
    ...extra,
  };
}

function run(args: string[], env: Record<string, string>) {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { cwd: dir, env });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

/** A long-running process whose stdout is read until a pattern shows. */
function start(cmd: string[], env: Record<string, string>, cwd = dir) {
  const p = Bun.spawn(cmd, { cwd, env, stdout: "pipe", stderr: "pipe" });
  const reader = p.stdout.getReader();
  let out = "";
  return {
    p,
    get out() {
      return out;
    },
    async until(pattern: RegExp): Promise<RegExpMatchArray> {
      for (;;) {
        const m = out.match(pattern);
        if (m) return m;
        const { value, done } = await reader.read();
        if (done)
          throw new Error(
            `exited (${await p.exited}) before ${pattern}:\n${out}\n${await new Response(p.stderr).text()}`,
          );
        out += new TextDecoder().decode(value);
      }
    },
    /** Reads on in the background, so the output keeps flowing and `out` grows. */
    drain() {
      void (async () => {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          out += new TextDecoder().decode(value);
        }
      })();
    },
  };
}

describe("cidgate dev, then the buyer command it prints", () => {
  test("a paid download the reader makes, then the sale in payments (dollars, per day, per network, CSV)", async () => {
    const state = join(dir, "dev");
    const out = join(state, "buyers.json");
    const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? dir };
    const dev = start([process.execPath, MAIN, "dev", "--port", "0", "--dir", state], env, ROOT);
    try {
      await dev.until(/Ctrl-C stops the shop/);
      dev.drain();
      const text = dev.out;
      expect(text).toContain("built-in (FACILITATOR_URL=local), settles base-sepolia");
      expect(text).toMatch(/RPC +http:\/\/127\.0\.0\.1:\d+, chain 84532 \(base-sepolia\)/);
      expect(text).toContain("for sale (3):");
      const articleCid = (await cidOfFile(ARTICLE)).toString();
      const origin = text.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)![1];
      expect(text).toMatch(
        new RegExp(
          `Why sell files one at a time +\\$0\\.01 on base-sepolia +${articleCid} +${origin}/x402/cid/${articleCid}`,
        ),
      );
      // The buyer command is for the cheapest file: the article.
      const command = text.match(/npx cidgate buy (\S+) --devnet (\S+) --out (\S+)/)!;
      expect(command[1]).toBe(`${origin}/x402/cid/${articleCid}`);
      expect(command[2]).toBe(out);
      expect(command[3]).toBe("why-pay-per-file.md");

      const saved = join(dir, "bought.md");
      const buy = run(["buy", command[1], "--devnet", command[2], "--out", saved], env);
      expect(buy.err).toContain("price: $0.01 on base-sepolia");
      expect(buy.code).toBe(0);
      expect(readFileSync(saved, "utf8")).toBe(readFileSync(ARTICLE, "utf8"));
      const tx = buy.err.match(/paid: transaction (0x[0-9a-f]{64})/)![1];

      // One info line per sale: payer, CID, dollars, transaction.
      const buyer = JSON.parse(readFileSync(out, "utf8")).buyers[0].address;
      let sale: Record<string, unknown> | undefined;
      while (!sale) {
        sale = dev.out
          .split("\n")
          .filter((l) => l.startsWith("{"))
          .map((l) => JSON.parse(l))
          .find((l) => l.msg === "payment settled");
        if (!sale) await Bun.sleep(20);
      }
      expect(sale).toMatchObject({ level: 30, cid: articleCid, payer: buyer, usd: "$0.01", tx });

      // A second buy of the same file: served, not charged again.
      const again = run(["buy", command[1], "--devnet", command[2], "--out", saved], env);
      expect(again.code).toBe(0);
      expect(again.err).toContain(`already paid (transaction ${tx} on base-sepolia): not charged again`);
      expect(again.err).not.toContain("paid: transaction");

      const db = text.match(/its sales: CIDGATE_DB=(\S+) npx cidgate payments/)![1];
      expect(db).toBe(join(state, "cidgate.db"));

      // The dashboard's token, made by the command dev prints, is one the dev shop accepts; one made
      // for the usual CIDGATE_DB (another secret, another database) is refused.
      const hint = text.match(/dashboard token: CIDGATE_DB=(\S+) npx cidgate token create --scope read\n/)!;
      expect(hint[1]).toBe(db);
      const stats = async (token: string) =>
        (await fetch(`${origin}/v3/x402/stats`, { headers: { authorization: `Bearer ${token}` } })).status;
      const token = run(["token", "create", "--scope", "read"], { ...env, CIDGATE_DB: hint[1] });
      expect(token.code).toBe(0);
      expect(await stats(token.out.trim())).toBe(200);
      const elsewhere = run(["token", "create", "--scope", "read"], env);
      expect(elsewhere.code).toBe(0);
      expect(await stats(elsewhere.out.trim())).toBe(401);
      const payments = run(["payments"], { ...env, CIDGATE_DB: db });
      expect(payments.code).toBe(0);
      expect(payments.out).toContain("recent sales (1 of 1 in the last 30 day(s)):");
      const today = new Date().toISOString().slice(0, 10);
      expect(payments.out).toMatch(new RegExp(`${today} +base-sepolia +1 +\\$0\\.01`));
      expect(payments.out).toMatch(/per network:\n.*\n +base-sepolia +1 +\$0\.01/);
      expect(payments.out).toContain("total: 1 sale(s), $0.01");

      const csv = run(["payments", "--csv"], { ...env, CIDGATE_DB: db });
      const lines = csv.out.trim().split("\n");
      expect(lines[0]).toBe("id,time,network,payer,cid,instruction_id,amount_usd,amount_units,tx");
      expect(lines).toHaveLength(2);
      expect(lines[1]).toContain(`,base-sepolia,${buyer},${articleCid},`);
      expect(lines[1]).toEndWith(`,$0.01,10000,${tx}`);
      // `payments list` is the same command, named.
      expect(run(["payments", "list", "--csv"], { ...env, CIDGATE_DB: db }).out).toBe(csv.out);

      const anvil = JSON.parse(readFileSync(out, "utf8")).pid as number;
      dev.p.kill("SIGTERM");
      expect(await dev.p.exited).toBe(0);
      expect(existsSync(state)).toBe(false);
      expect(await waitGone(anvil)).toBe(true);
    } finally {
      dev.p.kill("SIGKILL");
    }
  }, 120_000);
});

describe("cidgate content list", () => {
  test("every file with its CID, size, instruction and price; the database's pricing untouched", async () => {
    const env = shopEnv("list");
    const r = run(["content", "list"], env);
    expect(r.code).toBe(0);
    const articleCid = (await cidOfFile(ARTICLE)).toString();
    const size = readFileSync(ARTICLE).length;
    expect(r.out).toMatch(
      new RegExp(
        `articles/why-pay-per-file\\.md +${articleCid} +${size} +Why sell files one at a time \\(pricing\\.yaml#article\\) +\\$0\\.01 on base-sepolia`,
      ),
    );
    expect(r.out).toContain("$0.05 on base-sepolia");
    // Read, never applied: a running shop's prices cannot be re-pointed from a shell with another PAY_TO.
    const db = openDb(env.CIDGATE_DB);
    expect(db.sqlite.query("SELECT count(*) AS n FROM payment_instructions").get()).toEqual({ n: 0 });
    db.sqlite.close();
  }, 30_000);

  test("without PAY_TO: every file not for sale, and the pricing error on stderr", () => {
    const env = shopEnv("list-unpriced");
    delete (env as Record<string, string | undefined>).PAY_TO;
    const r = run(["content", "list"], env);
    expect(r.code).toBe(0);
    expect(r.out.match(/not for sale/g)).toHaveLength(3);
    expect(r.err).toContain("environment variable PAY_TO is not set");
  }, 30_000);
});

describe("cidgate doctor", () => {
  test("a sound local shop: exit 0, each setting shown, secrets hidden", () => {
    const r = run(["doctor"], shopEnv("doctor-ok"));
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/RELAYER_PRIVATE_KEY +\(set, hidden\)/);
    expect(r.out).not.toContain(devnet.relayer.privateKey.slice(2));
    expect(r.out).not.toContain(SECRET);
    for (const check of [
      "public URL",
      "facilitator",
      "RPC",
      "relayer gas",
      "USDC base-sepolia",
      "free disk",
      "database integrity",
    ])
      expect(r.out).toMatch(new RegExp(`ok +${check} `));
    expect(r.out).toContain("0 failure(s)");
  }, 30_000);

  test("a relayer with no ETH and a USDC address with no contract: exit 1, each named", () => {
    const r = run(
      ["doctor"],
      shopEnv("doctor-bad", {
        RELAYER_PRIVATE_KEY: generatePrivateKey(),
        USDC_ADDRESS_BASE_SEPOLIA: devnet.seller.address,
      }),
    );
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/FAIL +relayer gas +relayer 0x[0-9a-fA-F]{40} has no ETH/);
    expect(r.out).toMatch(/FAIL +USDC base-sepolia +no contract at/);
    expect(r.out).toContain("2 failure(s)");
  }, 30_000);
});

describe("an RPC per network, its URL carrying a key (RPC_URL_BASE_SEPOLIA alone, a remote facilitator)", () => {
  /** The real facilitator on the devnet, over HTTP as a remote one is reached. */
  function serveFacilitator() {
    const facilitator = createLocalFacilitator({
      rpcUrl: devnet.rpcUrl,
      relayerPrivateKey: devnet.relayer.privateKey,
      settings: { receiptTimeoutSeconds: 30, facilitatorNetworks: ["base-sepolia"] },
    });
    const app = new Elysia().use(facilitatorModule(facilitator));
    return Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (r) => app.fetch(r) });
  }
  /** The devnet's RPC as a provider's URL reads: a key in the userinfo and the query (anvil ignores both). */
  const keyed = () => `${devnet.rpcUrl.replace("http://", "http://shop:KEY-IN-USERINFO@")}/?apikey=KEY-IN-QUERY`;
  const env = (name: string, facilitator: string) => {
    const e: Record<string, string> = shopEnv(name, { FACILITATOR_URL: facilitator, RPC_URL_BASE_SEPOLIA: keyed() });
    delete e.RPC_URL;
    delete e.RELAYER_PRIVATE_KEY;
    return e;
  };

  test("doctor checks that RPC's chain id, warns of no missing RPC, and prints no key", async () => {
    const server = serveFacilitator();
    try {
      // Not spawnSync: the facilitator answers from this process's event loop.
      const p = Bun.spawn([process.execPath, MAIN, "doctor"], {
        cwd: dir,
        env: env("doctor-per-network", `http://127.0.0.1:${server.port}`),
        stdout: "pipe",
        stderr: "pipe",
      });
      const text = (await new Response(p.stdout).text()) + (await new Response(p.stderr).text());
      expect(await p.exited).toBe(0);
      expect(text).toMatch(/RPC_URL_BASE_SEPOLIA +http:\/\/…@127\.0\.0\.1:\d+\/…/);
      expect(text).toMatch(
        /ok +RPC base-sepolia +RPC_URL_BASE_SEPOLIA http:\/\/…@127\.0\.0\.1:\d+\/… is chain 84532 \(base-sepolia\), reads base-sepolia/,
      );
      expect(text).toMatch(
        /ok +USDC base-sepolia +0x[0-9a-fA-F]{40} \(USDC_ADDRESS_BASE_SEPOLIA\), a contract on chain/,
      );
      expect(text).not.toMatch(/WARN +RPC/);
      expect(text).not.toContain("KEY-IN-");
    } finally {
      server.stop(true);
    }
  }, 30_000);

  test("the start-up summary names that RPC and its chain, and neither it nor the log prints the key", async () => {
    const server = serveFacilitator();
    const shop = start([process.execPath, INDEX], env("summary-per-network", `http://127.0.0.1:${server.port}`));
    try {
      await shop.until(/make a management token/);
      expect(shop.out).toMatch(
        /RPC +http:\/\/…@127\.0\.0\.1:\d+\/… \(RPC_URL_BASE_SEPOLIA\), chain 84532 \(base-sepolia\)/,
      );
      expect(shop.out).toContain("0 warning(s)");
      shop.p.kill("SIGTERM");
      await shop.p.exited;
      shop.drain();
      const all = shop.out + (await new Response(shop.p.stderr).text());
      expect(all).not.toContain("KEY-IN-");
    } finally {
      shop.p.kill("SIGTERM");
      await shop.p.exited;
      server.stop(true);
    }
  }, 60_000);
});

describe("start-up", () => {
  test("HOST=0.0.0.0 without PUBLIC_URL: refused before listening, one clear line", () => {
    const p = Bun.spawnSync([process.execPath, INDEX], { cwd: dir, env: shopEnv("bind", { HOST: "0.0.0.0" }) });
    expect(p.exitCode).toBe(2);
    expect(p.stdout.toString()).not.toContain("listening");
    expect(p.stderr.toString()).toContain(
      "cidgate: refusing to start: public URL: HOST=0.0.0.0 listens beyond this machine",
    );
    expect(p.stderr.toString()).toContain("set PUBLIC_URL");
  }, 30_000);

  test("a priced network the facilitator does not settle: refused", () => {
    const p = Bun.spawnSync([process.execPath, INDEX], {
      cwd: dir,
      env: shopEnv("unsettled", { FACILITATOR_NETWORKS: "base" }),
    });
    expect(p.exitCode).toBe(2);
    expect(p.stdout.toString()).not.toContain("listening");
    expect(p.stderr.toString()).toContain("refusing to start: facilitator: the built-in facilitator");
    expect(p.stderr.toString()).toContain("does not settle base-sepolia");
  }, 30_000);

  test("a remote facilitator that does not answer, with something priced: refused", async () => {
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    const port = closed.port;
    closed.stop(true);
    const p = Bun.spawnSync([process.execPath, INDEX], {
      cwd: dir,
      env: shopEnv("remote-down", { FACILITATOR_URL: `http://127.0.0.1:${port}` }),
    });
    expect(p.exitCode).toBe(2);
    expect(p.stderr.toString()).toContain("did not answer GET /supported");
    expect(p.stderr.toString()).toContain("base-sepolia cannot be settled");
  }, 30_000);

  test("the built-in facilitator with its chain stopped: refused, naming the RPC", () => {
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    const rpc = `http://127.0.0.1:${closed.port}`;
    closed.stop(true);
    const p = Bun.spawnSync([process.execPath, INDEX], { cwd: dir, env: shopEnv("chain-down", { RPC_URL: rpc }) });
    expect(p.exitCode).toBe(2);
    expect(p.stdout.toString()).not.toContain("listening");
    expect(p.stderr.toString()).toContain(`refusing to start: RPC: RPC_URL ${rpc} did not answer eth_chainId`);
  }, 30_000);

  test("the summary: what is for sale with URLs; or, without PAY_TO, why not and the command that fixes it", async () => {
    const priced = start([process.execPath, INDEX], shopEnv("summary"));
    try {
      const [, url] = await priced.until(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      await priced.until(/make a management token: .*\n/);
      // Not the default database: the hint names it, or its token would be signed for another shop.
      expect(priced.out).toContain(
        `make a management token: CIDGATE_DB=${shopEnv("summary").CIDGATE_DB} npx cidgate token create --scope read,write --ttl 30d\n`,
      );
      const cid = (await cidOfFile(ARTICLE)).toString();
      expect(priced.out).toContain("pricing      ");
      expect(priced.out).toContain("config/pricing.yaml (3 instruction(s), 3 CID(s))");
      expect(priced.out).toContain("for sale (3):");
      expect(priced.out).toMatch(new RegExp(`\\$0\\.01 on base-sepolia +${cid} +${url}/x402/cid/${cid}`));
      expect((await fetch(`${url}/x402/cid/${cid}`)).status).toBe(402);
    } finally {
      priced.p.kill("SIGTERM");
      expect(await priced.p.exited).toBe(0);
    }

    const env = shopEnv("summary-unpriced");
    delete (env as Record<string, string | undefined>).PAY_TO;
    const unpriced = start([process.execPath, INDEX], env);
    try {
      await unpriced.until(/make a management token/);
      expect(unpriced.out).toContain("nothing is for sale:");
      expect(unpriced.out).toContain("environment variable PAY_TO is not set");
      expect(unpriced.out).toContain("Fix: PAY_TO=0xYourWallet npm start");
      expect(unpriced.out).toContain("npx cidgate dev");
    } finally {
      unpriced.p.kill("SIGTERM");
      await unpriced.p.exited;
    }
  }, 60_000);

  test("SIGTERM to `npm start`'s own PID stops the server (npm start execs bun)", async () => {
    const npm = start(["npm", "start"], shopEnv("npm-start"), ROOT);
    try {
      await npm.until(/make a management token/);
      const children = readFileSync(`/proc/${npm.p.pid}/task/${npm.p.pid}/children`, "utf8").trim().split(/\s+/);
      expect(children).toHaveLength(1);
      const server = Number(children[0]);
      expect(readFileSync(`/proc/${server}/cmdline`, "utf8")).toContain("src/index.ts");
      expect(alive(server)).toBe(true);
      npm.p.kill("SIGTERM");
      await npm.p.exited;
      expect(await waitGone(server, 10_000)).toBe(true);
    } finally {
      npm.p.kill("SIGKILL");
    }
  }, 60_000);
});
