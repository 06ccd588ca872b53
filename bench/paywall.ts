/**
 * The paywall page (issue 11, "## Choices"): what a buyer's browser loads
 * on the pay path, and how soon it paints, against baselines in the same run.
 *
 *   1. weight: the HTML 402 (CSS inlined) as served, and the page script as
 *      served (gzip); the budget is 60 KB gzipped for JS + CSS + HTML;
 *   2. first paint in Debian's chromium from localhost (cache off, a fresh
 *      page per load): first-contentful-paint and "ready" (the script ran,
 *      Pay enabled), against a bare Bun.serve page of one paragraph loaded
 *      the same way, alternating;
 *   3. the 402 answer itself in process (`app.handle`): the HTML page vs the
 *      JSON 402, alternating rounds; the page is cached per offer like the JSON.
 *
 *   bun run bench:paywall        (npx bun bench/paywall.ts)
 *   BENCH_LOADS=20 BENCH_HANDLES=20000 BENCH_ROUNDS=3   (defaults)
 *
 * Starts the devnet stack of test/e2e/stack.ts (anvil, built-in facilitator,
 * the production server) and chromium; stops them at the end.
 * Figures: docs/BENCHMARKS.md.
 */
import { cpus, loadavg } from "node:os";
import { createTestStack } from "../test/e2e/stack";
import { launchBrowser } from "../test/support/browser";

const LOADS = Number(process.env.BENCH_LOADS ?? 20);
const HANDLES = Number(process.env.BENCH_HANDLES ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const BUDGET_BYTES = 60 * 1024;

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;

const stack = await createTestStack({
  files: { "essay.pdf": new Uint8Array(200_000).fill(7) },
  config: { "site.yaml": "site:\n  name: Bench shop\n" },
});
const bare = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () =>
    new Response("<!doctype html><title>bare</title><p>hello</p>", { headers: { "Content-Type": "text/html" } }),
});
const browser = await launchBrowser();
try {
  const path = `/x402/cid/${stack.cids["essay.pdf"]}`;
  console.log(
    `machine: ${cpus().length} x ${cpus()[0]?.model ?? "?"}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")} (shared with other builds: compare ratios, not absolute times)`,
  );

  // 1. weight, as the server sends it
  const page = await fetch(`${stack.url}${path}`, { headers: { Accept: BROWSER_ACCEPT } });
  const html = new Uint8Array(await page.arrayBuffer());
  const scriptPath = /<script src="([^"]+)"/.exec(new TextDecoder().decode(html))?.[1] as string;
  const script = await fetch(`${stack.url}${scriptPath}`, {
    headers: { "Accept-Encoding": "gzip" },
    decompress: false,
  } as RequestInit);
  const scriptWire = (await script.arrayBuffer()).byteLength;
  const scriptRaw = (
    await (await fetch(`${stack.url}${scriptPath}`, { headers: { "Accept-Encoding": "identity" } })).arrayBuffer()
  ).byteLength;
  const htmlGzip = Bun.gzipSync(html).byteLength;
  const total = htmlGzip + scriptWire;
  console.log("\n1. pay path weight");
  console.log(`   HTML 402 (CSS inline): ${kb(html.byteLength)} as sent, ${kb(htmlGzip)} gzipped`);
  console.log(`   page script: ${kb(scriptRaw)} minified, ${kb(scriptWire)} gzipped (as sent)`);
  console.log(
    `   total gzipped: ${kb(total)} of the ${kb(BUDGET_BYTES)} budget (${total <= BUDGET_BYTES ? "within" : "OVER"})`,
  );

  // 2. first paint, alternating with a bare page
  const fcp: number[] = [];
  const ready: number[] = [];
  const bareFcp: number[] = [];
  const measure = async (url: string) => {
    const p = await browser.context.newPage();
    const cdp = await browser.context.newCDPSession(p);
    await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
    await p.goto(url, { waitUntil: "load" });
    const paint = await p.evaluate(async () => {
      for (let i = 0; i < 100 && performance.getEntriesByName("first-contentful-paint").length === 0; i++)
        await new Promise((r) => setTimeout(r, 10));
      return {
        fcp: performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? Number.NaN,
        ready: performance.getEntriesByName("paywall-ready")[0]?.startTime ?? Number.NaN,
      };
    });
    await p.close();
    return paint;
  };
  await measure(`${stack.url}${path}`); // warm the server's caches and the script build
  await measure(bare.url.href);
  for (let i = 0; i < LOADS; i++) {
    const offer = await measure(`${stack.url}${path}`);
    fcp.push(offer.fcp);
    ready.push(offer.ready);
    bareFcp.push((await measure(bare.url.href)).fcp);
  }
  console.log(`\n2. first paint from localhost, chromium, cache off, ${LOADS} loads each`);
  console.log(
    `   offer page: first-contentful-paint p50 ${percentile(fcp, 50).toFixed(0)} ms, p90 ${percentile(fcp, 90).toFixed(0)} ms; ready to pay p50 ${percentile(ready, 50).toFixed(0)} ms, p90 ${percentile(ready, 90).toFixed(0)} ms`,
  );
  console.log(
    `   bare page:  first-contentful-paint p50 ${percentile(bareFcp, 50).toFixed(0)} ms, p90 ${percentile(bareFcp, 90).toFixed(0)} ms; offer/bare p50 ratio ${(percentile(fcp, 50) / percentile(bareFcp, 50)).toFixed(2)}`,
  );

  // 3. the 402 itself, in process
  const handle = async (accept: string) => {
    const request = () => new Request(`http://localhost${path}`, { headers: { Accept: accept } });
    const started = performance.now();
    for (let i = 0; i < HANDLES; i++) {
      const r = await stack.app.handle(request());
      if (r.status !== 402) throw new Error(`expected 402, got ${r.status}`);
      await r.arrayBuffer();
    }
    return ((performance.now() - started) * 1000) / HANDLES;
  };
  await handle("*/*");
  await handle(BROWSER_ACCEPT);
  const jsonUs: number[] = [];
  const htmlUs: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    jsonUs.push(await handle("*/*"));
    htmlUs.push(await handle(BROWSER_ACCEPT));
  }
  console.log(`\n3. the 402 in process (app.handle), ${HANDLES} requests x ${ROUNDS} rounds, alternating`);
  console.log(
    `   JSON 402: ${jsonUs.map((u) => u.toFixed(1)).join(" / ")} us per request; HTML 402: ${htmlUs.map((u) => u.toFixed(1)).join(" / ")} us; HTML/JSON median ratio ${(percentile(htmlUs, 50) / percentile(jsonUs, 50)).toFixed(2)}`,
  );
} finally {
  await browser.close();
  bare.stop(true);
  await stack.stop();
}
