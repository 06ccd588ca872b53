/**
 * The paywall's HTTP side without a browser: who gets the HTML 402 and who
 * keeps exactly today's JSON one, the page's headers and escaping, the
 * served file's Content-Disposition, the site settings from a pricing file,
 * the storefront, /favicon.ico and /robots.txt. The browser itself is in
 * browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createApp } from "../../src/app";
import { createAccessTokens } from "../../src/entitlements/access-token";
import type { Facilitator } from "../../src/facilitator/types";
import { createLogger } from "../../src/http/logging";
import { prefersHtml } from "../../src/paywall/accept";
import { contentDisposition } from "../../src/paywall/site";
import { createPricing } from "../../src/pricing/service";
import { addContent, type Fixture, fixture, JWT_SECRET, newAccount, price } from "../gateway/fixtures";

const CHROME_ACCEPT =
  "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
const seller = newAccount().address;
const buyer = newAccount().address;
const unused: Facilitator = {
  verify: () => Promise.reject(new Error("unused")),
  settle: () => Promise.reject(new Error("unused")),
  supported: () => Promise.reject(new Error("unused")),
};

let f: Fixture;
let cids: Record<string, string>;

beforeAll(async () => {
  f = fixture();
  cids = await addContent(f, { "report.pdf": "%PDF-1.4 fake but indexed", "naïve notes.txt": "hello" });
  price(f, cids["report.pdf"] as string, [{ payTo: seller, amount: "1500000" }], 'Annual <report> & "more"');
  price(f, cids["naïve notes.txt"] as string, [{ payTo: seller, amount: "10000" }], "Notes");
});
afterAll(() => f.cleanup());

/** The app with real pricing over `yaml` (config/site.yaml), reloaded once. */
async function appWithSite(yaml: string | undefined) {
  mkdirSync(f.settings.configDir, { recursive: true });
  const path = join(f.settings.configDir, "site.yaml");
  if (yaml !== undefined) writeFileSync(path, yaml);
  else writeFileSync(path, "");
  const pricing = createPricing({
    instructions: f.stores.instructions,
    content: f.stores.content,
    settings: f.settings,
  });
  const report = await pricing.reload("start");
  const app = createApp({
    settings: f.settings,
    db: f.db,
    stores: f.stores,
    log: createLogger("silent"),
    jwtSecret: JWT_SECRET,
    facilitator: unused,
    pricing,
  });
  return { app, report };
}

const get = (app: ReturnType<typeof createApp>, path: string, headers: Record<string, string> = {}, method = "GET") =>
  app.handle(new Request(`http://localhost${path}`, { method, headers }));

describe("who gets which 402", () => {
  test("Accept preferring text/html: a page; anything else: JSON", () => {
    expect(prefersHtml(CHROME_ACCEPT)).toBe(true);
    expect(prefersHtml("text/html")).toBe(true);
    for (const accept of [null, "*/*", "application/json", "application/json, text/html", "text/html;q=0.5, */*"])
      expect(prefersHtml(accept)).toBe(false);
  });

  test("a browser navigating gets the HTML page with the same PAYMENT-REQUIRED and CORS as the JSON 402", async () => {
    const { app } = await appWithSite(undefined);
    const path = `/x402/cid/${cids["report.pdf"]}`;
    const json = await get(app, path);
    const html = await get(app, path, { Accept: CHROME_ACCEPT, "User-Agent": "Mozilla/5.0" });
    expect(json.status).toBe(402);
    expect(html.status).toBe(402);
    expect(json.headers.get("content-type")).toBe("application/json");
    expect(html.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(html.headers.get("payment-required")).toBe(json.headers.get("payment-required"));
    expect(html.headers.get("access-control-allow-origin")).toBe("*");
    expect(html.headers.get("access-control-expose-headers")).toBe(json.headers.get("access-control-expose-headers"));
    expect(html.headers.get("cache-control")).toBe("no-store");
    // Nothing from anywhere else: the browser enforces it.
    expect(html.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(html.headers.get("content-security-policy")).toContain("script-src 'self'");
    const page = await html.text();
    expect(page).toContain("Annual &#60;report&#62; &#38; &#34;more&#34;");
    expect(page).not.toContain("<report>");
    expect(page).toContain("report.pdf");
    expect(page).toContain("$1.50");
    expect(page).toContain("1.5 USDC");
    expect(page).toContain(seller);
    expect(page).not.toMatch(/(src|href)="https?:/); // no third-party script, style, font or image
    // The page is one cached buffer per offer: every later 402 carries all of it again.
    const again = await get(app, path, { Accept: CHROME_ACCEPT });
    expect(await again.text()).toBe(page);
  });

  test("the JSON 402 is exactly today's: the v1 body, no page headers", async () => {
    const { app } = await appWithSite(undefined);
    const path = `/x402/cid/${cids["report.pdf"]}`;
    for (const accept of [undefined, "*/*", "application/json"]) {
      const r = await get(app, path, accept ? { Accept: accept } : {});
      const body = (await r.json()) as { x402Version: number; accepts: { maxAmountRequired: string }[] };
      expect(body.x402Version).toBe(1);
      expect(body.accepts[0]?.maxAmountRequired).toBe("1500000");
      expect(r.headers.get("content-security-policy")).toBeNull();
      expect(r.headers.get("content-type")).toBe("application/json");
    }
  });

  test("HEAD as a browser: 402, the page's headers, no body", async () => {
    const { app } = await appWithSite(undefined);
    const r = await get(app, `/x402/cid/${cids["report.pdf"]}`, { Accept: CHROME_ACCEPT }, "HEAD");
    expect(r.status).toBe(402);
    expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(await r.text()).toBe("");
  });

  test("the page script is served from cidgate, gzipped, cacheable by version", async () => {
    const { app } = await appWithSite(undefined);
    const page = await (await get(app, `/x402/cid/${cids["report.pdf"]}`, { Accept: CHROME_ACCEPT })).text();
    const src = /<script src="([^"]+)" defer>/.exec(page)?.[1];
    expect(src).toMatch(/^\/paywall\/app\.js\?v=[0-9a-f]{16}$/);
    const r = await get(app, src as string, { "Accept-Encoding": "gzip" });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-encoding")).toBe("gzip");
    expect(r.headers.get("cache-control")).toContain("immutable");
    const plain = await (await get(app, src as string)).text();
    expect(plain).toContain("eth_signTypedData_v4");
    expect(plain).not.toContain("innerHTML");
    expect(plain).not.toContain("createObjectURL");
  });

  test("the pay path stays within its budget: HTML + CSS + JS at most 60 KB gzipped", async () => {
    const { app } = await appWithSite(undefined);
    const page = await (await get(app, `/x402/cid/${cids["report.pdf"]}`, { Accept: CHROME_ACCEPT })).text();
    const src = /<script src="([^"]+)" defer>/.exec(page)?.[1] as string;
    const script = await (await get(app, src, { "Accept-Encoding": "gzip" })).arrayBuffer();
    expect(Bun.gzipSync(page).byteLength + script.byteLength).toBeLessThanOrEqual(60 * 1024);
  });
});

test("access: once (no later access): the page does not offer to pay, and says who can buy", async () => {
  const once = await addContent(f, { "ticket.txt": "one use" });
  const instruction = price(f, once["ticket.txt"] as string, [{ payTo: seller, amount: "10000" }], "Ticket");
  f.stores.instructions.update(instruction.id, { access: "once" });
  const page = await (
    await get((await appWithSite(undefined)).app, `/x402/cid/${once["ticket.txt"]}`, { Accept: CHROME_ACCEPT })
  ).text();
  expect(page).toContain("Sold to programs only");
  expect(page).toContain('<div class="actions" hidden>');
  expect(page).toContain('"browserCanBuy":false');
});

describe("the served file keeps its name", () => {
  test("Content-Disposition: attachment with the real name; inline only for media and PDF when the site asks", () => {
    expect(contentDisposition("/c/report.pdf", "application/pdf", "attachment")).toBe(
      `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`,
    );
    expect(contentDisposition("/c/report.pdf", "application/pdf", "inline")).toStartWith("inline;");
    expect(contentDisposition("/c/clip.mp4", "video/mp4", "inline")).toStartWith("inline;");
    expect(contentDisposition("/c/data.zip", "application/zip", "inline")).toStartWith("attachment;");
    expect(contentDisposition('/c/naïve "q".txt', "text/plain", "attachment")).toBe(
      `attachment; filename="na_ve _q_.txt"; filename*=UTF-8''na%C3%AFve%20%22q%22.txt`,
    );
  });

  test("an entitled browser (access cookie) gets the file itself with its name, inline as the site says", async () => {
    const cid = cids["report.pdf"] as string;
    const instruction = f.stores.instructions.forCid(cid);
    f.stores.entitlements.grant(
      { payer: buyer, cid, instructionId: instruction?.id as string },
      Math.floor(Date.now() / 1000) - 5,
    );
    const token = await createAccessTokens({ managementSecret: JWT_SECRET }).sign({
      payer: buyer,
      cid,
      exp: Math.floor(Date.now() / 1000) + 600,
    });
    const headers = { Accept: CHROME_ACCEPT, Cookie: `cidgate_access=${token}` };
    const saved = await get((await appWithSite(undefined)).app, `/x402/cid/${cid}`, headers);
    expect(saved.status).toBe(200);
    expect(saved.headers.get("content-type")).toBe("application/pdf");
    expect(saved.headers.get("content-disposition")).toBe(
      `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`,
    );
    expect(await saved.text()).toBe("%PDF-1.4 fake but indexed");
    const shown = await get((await appWithSite("site:\n  disposition: inline\n")).app, `/x402/cid/${cid}`, headers);
    expect(shown.headers.get("content-disposition")).toStartWith("inline; filename=");
  });
});

describe("site settings in a pricing file", () => {
  test("site name and logo on the page; the logo served from content/", async () => {
    mkdirSync(join(f.settings.contentDir, "brand"), { recursive: true });
    writeFileSync(join(f.settings.contentDir, "brand/logo.svg"), "<svg xmlns='http://www.w3.org/2000/svg'/>");
    const { app, report } = await appWithSite("site:\n  name: Ada's shop\n  logo: brand/logo.svg\n");
    expect(report.errors).toEqual([]);
    const page = await (await get(app, `/x402/cid/${cids["report.pdf"]}`, { Accept: CHROME_ACCEPT })).text();
    expect(page).toContain("Ada&#39;s shop");
    expect(page).toContain('<img src="/paywall/logo" alt="">');
    const logo = await get(app, "/paywall/logo");
    expect(logo.status).toBe(200);
    expect(await logo.text()).toContain("<svg");
  });

  test("a logo that is a file for sale is not given away", async () => {
    const { app } = await appWithSite("site:\n  logo: report.pdf\n");
    const r = await get(app, "/paywall/logo");
    expect(r.status).toBe(404);
    expect(await r.text()).not.toContain("%PDF");
  });

  test("wrong settings are rejected with file, line and rule; a logo outside content/ included", async () => {
    const { report } = await appWithSite("site:\n  name: x\n  logo: ../secret.key\n  colour: red\n");
    expect(report.result).toBe("rejected");
    const rules = report.errors.map((e) => `${e.line}:${e.rule}`);
    expect(rules).toContain("4:unknown-field");
    const again = (await appWithSite("site:\n  logo: ../secret.key\n")).report;
    expect(again.errors.map((e) => [e.line, e.rule, e.message])).toEqual([
      [2, "format", "site.logo: must not contain '..'"],
    ]);
  });

  test("two files giving site: is an error naming both", async () => {
    mkdirSync(f.settings.configDir, { recursive: true });
    writeFileSync(join(f.settings.configDir, "another.yaml"), "site:\n  name: other\n");
    try {
      const { report } = await appWithSite("site:\n  name: mine\n");
      expect(report.errors.map((e) => e.rule)).toEqual(["duplicate-section"]);
      expect(report.errors[0]?.message).toContain("another.yaml:1:1");
    } finally {
      writeFileSync(join(f.settings.configDir, "another.yaml"), "");
    }
  });
});

describe("/, /favicon.ico, /robots.txt", () => {
  test("no storefront unless asked: / is a 404 in the error shape", async () => {
    const r = await get((await appWithSite(undefined)).app, "/", { Accept: CHROME_ACCEPT });
    expect(r.status).toBe(404);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });

  test("storefront.list: every priced file, linking to its page, names escaped", async () => {
    const r = await get((await appWithSite("storefront:\n  list: true\n")).app, "/", { Accept: CHROME_ACCEPT });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const html = await r.text();
    for (const cid of Object.values(cids)) expect(html).toContain(`href="/x402/cid/${cid}"`);
    expect(html).toContain("Annual &#60;report&#62;");
    expect(html).toContain("$1.50");
  });

  test("favicon and robots answer, and robots keeps crawlers off paid paths", async () => {
    const { app } = await appWithSite(undefined);
    const icon = await get(app, "/favicon.ico");
    expect(icon.status).toBe(200);
    expect(icon.headers.get("content-type")).toBe("image/svg+xml");
    const robots = await get(app, "/robots.txt");
    expect(robots.status).toBe(200);
    expect(await robots.text()).toContain("Disallow: /x402/");
  });
});
