/**
 * cidgate behind Debian's caddy with automatic HTTPS (its internal CA), as
 * docs/deploy.md sets it up: PUBLIC_URL is the https origin, TRUST_PROXY on.
 * The 402 names https resource URLs, x402-fetch pays over https through the
 * proxy on the real devnet, and Range works through it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSigner, wrapFetchWithPayment } from "x402-fetch";
import { caddyPath, type RunningCaddy, startCaddy } from "../support/caddy";
import { createTestStack, type TestStack } from "./stack";

const caddy = caddyPath("cidgate behind caddy");
const BIG = new Uint8Array(200_000).map((_, i) => (i * 7 + 3) & 0xff);
const FILES = { "page.html": "<h1>over https</h1>\n", "big.bin": BIG };

let proxy: RunningCaddy;
let stack: TestStack;
/** fetch that trusts caddy's internal CA (Bun's `tls.ca`), as a buyer's client would trust a public one. */
const httpsFetch = ((input: string | URL | Request, init?: RequestInit) =>
  fetch(input, { ...init, tls: { ca: proxy.ca } } as RequestInit)) as typeof fetch;

describe.skipIf(!caddy)("cidgate behind caddy (tls internal)", () => {
  beforeAll(async () => {
    // caddy's port is known before cidgate starts: PUBLIC_URL must be it. So caddy first, upstream
    // on a port chosen now, then the stack on that port.
    const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    const upstreamPort = probe.port!;
    probe.stop(true);
    proxy = await startCaddy(caddy!, `127.0.0.1:${upstreamPort}`);
    stack = await createTestStack({
      files: FILES,
      env: { PORT: String(upstreamPort), PUBLIC_URL: proxy.origin, TRUST_PROXY: "true" },
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await proxy?.stop();
  });

  const url = (name: keyof typeof FILES) => `${proxy.origin}/x402/cid/${stack.cids[name]}`;

  test("the 402 through the proxy names https resource URLs (PUBLIC_URL), v1 body and v2 header", async () => {
    const res = await httpsFetch(url("page.html"));
    expect(res.status).toBe(402);
    const body = (await res.json()) as { accepts: { resource: string }[] };
    expect(body.accepts[0].resource).toBe(url("page.html"));
    expect(body.accepts[0].resource).toStartWith("https://");
    const v2 = JSON.parse(Buffer.from(res.headers.get("payment-required")!, "base64").toString()) as {
      resource: { url: string };
    };
    expect(v2.resource.url).toBe(url("page.html"));
  });

  test("x402-fetch pays over https through caddy and gets the file", async () => {
    const signer = await createSigner("base-sepolia", stack.devnet.buyers[0].privateKey);
    const seller = stack.devnet.seller.address;
    const before = await stack.balanceOf(seller);
    const res = await wrapFetchWithPayment(httpsFetch, signer as never)(url("page.html"));
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(FILES["page.html"]);
    expect(res.headers.get("x-payment-response")).toBeString();
    expect(await stack.balanceOf(seller)).toBe(before + 10_000n);
  }, 60_000);

  test("Range through the proxy: a paid request for a slice gets 206 with exactly those bytes", async () => {
    const signer = await createSigner("base-sepolia", stack.devnet.buyers[1].privateKey);
    const res = await wrapFetchWithPayment(httpsFetch, signer as never)(url("big.bin"), {
      headers: { Range: "bytes=100000-100099" },
    });
    expect(res.status).toBe(206);
    expect(res.headers.get("content-range")).toBe(`bytes 100000-100099/${BIG.length}`);
    expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(BIG.subarray(100000, 100100)))).toBe(true);
  }, 60_000);

  test("docs/deploy.md's Caddyfile is one caddy accepts", () => {
    const doc = readFileSync(join(import.meta.dir, "../../docs/deploy.md"), "utf8");
    const caddyfile = /```\n(shop\.example\.com \{[\s\S]*?\n\})\n```/.exec(doc)?.[1];
    expect(caddyfile).toContain("reverse_proxy 127.0.0.1:4021");
    const dir = mkdtempSync(join(tmpdir(), "cidgate-caddyfile-"));
    try {
      writeFileSync(join(dir, "Caddyfile"), `${caddyfile}\n`);
      const p = Bun.spawnSync([caddy!, "adapt", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"], {
        env: { PATH: process.env.PATH ?? "", HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
        stderr: "pipe",
      });
      expect({ code: p.exitCode, err: p.stderr.toString().includes('"level":"error"') }).toEqual({
        code: 0,
        err: false,
      });
      expect(p.stdout.toString()).toContain('"upstreams":[{"dial":"127.0.0.1:4021"}]');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
