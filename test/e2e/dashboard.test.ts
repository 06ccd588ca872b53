/**
 * The dashboard in a real browser (Debian's chromium via playwright-core)
 * over a whole cidgate on a local chain (stack.ts): log in, two purchases by
 * real x402 clients whose sum the chart and the table show to the cent, a
 * settlement left pending under "needs attention", a revoke from the page,
 * and the sales as signed webhooks at a receiver on 127.0.0.1.
 *
 * The one fake: the facilitator answers `settlement_pending` for one file
 * without settling it (a fault injected to leave a settlement pending); every
 * other call reaches the real built-in facilitator.
 *
 * Screenshots of every state, at 375 px and at desktop width, light and dark,
 * go to CIDGATE_SCREENSHOTS (a folder) when it is set; docs/img/dashboard.png
 * is the desktop one (`CIDGATE_SCREENSHOTS=docs/img`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { createSigner, wrapFetchWithPayment } from "x402-fetch";
import { createToken } from "../../src/http/auth";
import { verifySignature } from "../../src/notifications/signature";
import { startReceiver } from "../notifications/support";
import { browserAvailable, type LaunchedBrowser, launchBrowser } from "../support/browser";
import { eventually } from "../support/eventually";
import { createTestStack, STACK_JWT_SECRET, type TestStack } from "./stack";

const RUN = browserAvailable("dashboard");
const PRICE = 1_250_000n; // $1.25: two sales are $2.50
const FILES = {
  "guide.pdf": new TextEncoder().encode("%PDF-1.4 a guide\n".repeat(40)),
  "photo.jpg": new Uint8Array(3000).map((_, i) => (i * 7 + 3) & 0xff),
  "pending.txt": new TextEncoder().encode("this one stays pending\n"),
};

let stack: TestStack;
let browser: LaunchedBrowser;
let shots: string;
let keepShots = false;
const hook = startReceiver();
let hookSecret = "";

beforeAll(async () => {
  if (!RUN) return;
  let pendingCid = "";
  stack = await createTestStack({
    files: FILES,
    amount: PRICE.toString(),
    buyers: 3,
    wrapFacilitator: (real) => ({
      verify: (r) => real.verify(r),
      // FAULT (named as such): this file's settlement is answered "pending" and never sent.
      settle: (r) =>
        pendingCid && JSON.stringify(r).includes(pendingCid)
          ? Promise.resolve({
              success: false,
              errorReason: "settlement_pending",
              transaction: "",
              network: "base-sepolia",
            })
          : real.settle(r),
      supported: () => real.supported(),
    }),
  });
  pendingCid = stack.cids["pending.txt"];
  browser = await launchBrowser();
  keepShots = !!process.env.CIDGATE_SCREENSHOTS;
  shots = process.env.CIDGATE_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), "cidgate-dashboard-shots-"));
  mkdirSync(shots, { recursive: true });
}, 120_000);

afterAll(async () => {
  hook.stop();
  if (!RUN) return;
  await browser?.close();
  await stack?.stop();
  if (!keepShots) rmSync(shots, { recursive: true, force: true });
});

const url = (file: string) => `${stack.url}/x402/cid/${stack.cids[file]}`;

async function buy(buyer: number, file: string) {
  const signer = await createSigner("base-sepolia", stack.devnet.buyers[buyer].privateKey);
  return wrapFetchWithPayment(fetch, signer as never, PRICE)(url(file));
}

/** Waits (test/support/eventually.ts) until what the page shows passes `ok`; the failure says what it last saw. */
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  let last: T | undefined;
  try {
    await eventually(async () => ok((last = await read())), what);
  } catch (e) {
    throw new Error(`${(e as Error).message}; last saw ${JSON.stringify(last)}`);
  }
  return last as T;
}

const visible = (page: Page, selector: string) =>
  until(
    () => page.locator(selector).isVisible(),
    (v) => v,
    `${selector} visible`,
  );
const text = (page: Page, selector: string, want: string | RegExp) =>
  until(
    () =>
      page
        .locator(selector)
        .textContent()
        .then((t) => t ?? ""),
    (t) => (typeof want === "string" ? t.trim() === want : want.test(t)),
    `${selector} shows ${want}`,
  );
const count = (page: Page, selector: string, n: number) =>
  until(
    () => page.locator(selector).count(),
    (c) => c === n,
    `${n} of ${selector}`,
  );
const attr = (page: Page, selector: string, name: string, want: string) =>
  until(
    () => page.locator(selector).getAttribute(name),
    (v) => v === want,
    `${selector}[${name}=${want}]`,
  );

async function shoot(page: Page, name: string) {
  for (const [label, width, height] of [
    ["mobile", 375, 812],
    ["desktop", 1280, 900],
  ] as const) {
    await page.setViewportSize({ width, height });
    await page.waitForTimeout(250); // the charts redraw on resize (debounced 150 ms)
    await page.screenshot({ path: join(shots, `dashboard-${name}-${label}.png`), fullPage: true });
    if (label === "mobile" && keepShots) {
      // A phone-sized page is long: also in screen-high pieces, to look at each at full size.
      const tall = (await page.evaluate("document.documentElement.scrollHeight")) as number;
      for (let y = 0, i = 1; y < tall; y += height, i++)
        await page.screenshot({
          path: join(shots, `dashboard-${name}-${label}-${i}.png`),
          fullPage: true,
          clip: { x: 0, y, width, height: Math.min(height, tall - y) },
        });
    }
  }
}

describe.if(RUN)("the dashboard in chromium", () => {
  test("log in, two purchases summed exactly in the chart and the table, a pending settlement under needs attention, revoke", async () => {
    const api = async (method: string, path: string, body?: unknown) => {
      const token = await createToken(STACK_JWT_SECRET, { scopes: ["read", "write"], ttlSeconds: 600 });
      const res = await fetch(stack.url + path, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return (await res.json()) as any;
    };
    hookSecret = (await api("POST", "/v3/x402/webhooks", { url: hook.url, events: ["payment.settled"] })).data.secret;

    const page = await browser.context.newPage();
    page.on("pageerror", (e) => {
      throw e;
    });
    // Nothing the CSP blocks, no script error: the console stays clean (a 401 on purpose is the one expected line).
    const consoleErrors: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error" && !m.text().includes("401")) consoleErrors.push(m.text());
    });
    const thirdParty: string[] = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(stack.url)) thirdParty.push(r.url());
    });

    // Logged out: the login form, and a wrong token is refused with words.
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${stack.url}/dashboard`);
    await visible(page, "#login");
    await shoot(page, "login");
    await page.fill("#token", "not-a-token");
    await page.press("#token", "Enter");
    await text(page, "#login-error", /not valid/);

    // Before any sale: empty states.
    const token = await createToken(STACK_JWT_SECRET, { scopes: ["read", "write"], ttlSeconds: 600 });
    await page.fill("#token", token);
    await page.click("#login-form button[type=submit]");
    await visible(page, "#app");
    await text(page, "#revenue-total", "$0.00");
    await text(page, "#attention-list", /Nothing needs attention/);
    await shoot(page, "empty");

    // Two purchases by a real client, and one left pending by the fault.
    expect((await buy(0, "guide.pdf")).status).toBe(200);
    expect((await buy(1, "photo.jpg")).status).toBe(200);
    expect((await buy(2, "pending.txt")).status).toBe(503);

    await page.click("#refresh");
    await attr(page, "#revenue-chart", "data-total", "$2.50");
    await text(page, "#revenue-total", "$2.50");
    await text(page, "#sales-total", "$2.50");
    await text(page, "#summary-revenue", "$2.50");
    // The chart is uPlot's canvas, drawn.
    await count(page, "#revenue-chart canvas", 1);
    // Three files were offered; two sold. The one left pending is no sale.
    await count(page, "#sales-table tbody tr", 3);
    await text(page, "#sales-table tbody", /guide\.pdf/);
    await text(page, "#sales-table tbody", /\$1\.25/);
    await count(page, "#sales-table tbody .spark canvas", 3);

    // Needs attention: the pending settlement, named by file, amount and payer.
    const attention = '#attention-list li[data-kind="unconfirmed"]';
    await count(page, attention, 1);
    const said = await page
      .locator(attention)
      .textContent()
      .then((t) => t ?? "");
    expect(said).toContain("Settlement unconfirmed");
    expect(said).toContain("pending.txt");
    expect(said).toContain("$1.25");
    await text(page, '#health-list li[data-health="Facilitator"] .badge', "ok");
    await text(page, '#health-list li[data-health="RPC"] .badge', "ok");

    // Recent payments: dollars, states, and the transactions linked to sepolia.basescan.org.
    await count(page, '#payments-table a[href^="https://sepolia.basescan.org/tx/0x"]', 2);
    await text(page, "#payments-table tbody", /unconfirmed/);

    // The funnel: offers shown by the 402s, and the sales.
    await count(page, "#funnel-table tbody tr", 3);

    // Sortable by keyboard: sort by file name.
    await page.locator("#sales-table th button", { hasText: "File" }).focus();
    await page.keyboard.press("Enter");
    await text(page, "#sales-table tbody tr:first-child", /guide\.pdf/);
    await page.keyboard.press("Enter");
    await text(page, "#sales-table tbody tr:first-child", /photo\.jpg/);

    // Per instruction: one row, the same sum.
    await page.click("[data-by=instruction]");
    await count(page, "#sales-table tbody tr", 1);
    await text(page, "#sales-total", "$2.50");
    await page.click("[data-by=cid]");
    await count(page, "#sales-table tbody tr", 3);

    await shoot(page, "sales");
    await page.click("#theme");
    await shoot(page, "sales-dark");
    await page.click("#theme");

    // Revoke from the page: asks once more, then the entitlement is gone from the active list.
    const entitlement = "#entitlements-table tbody tr[data-entitlement]";
    await count(page, entitlement, 2);
    const revoke = `${entitlement}:first-child button`;
    await page.click(revoke);
    await text(page, revoke, "Confirm revoke");
    await page.click(revoke);
    await count(page, entitlement, 1);
    const listed = await api("GET", "/v3/x402/entitlements?active=false");
    expect(listed.data.entitlements).toHaveLength(1);

    // The sales reached the webhook, signed.
    await hook.until(2);
    for (const r of hook.received)
      expect(verifySignature(hookSecret, r.body, r.headers.get("cidgate-signature"))).toBe(true);
    const amounts = hook.events().map((e) => e.data.amount);
    expect(amounts).toEqual([PRICE.toString(), PRICE.toString()]);
    await page.click("#refresh");
    await count(page, "#deliveries-table tbody tr", 2);
    await text(page, "#deliveries-table tbody", /delivered/);

    // The README's picture: desktop, light, with the sales in.
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.waitForTimeout(250);
    await page.screenshot({ path: join(shots, "dashboard.png"), fullPage: true });

    // Log out: the token is forgotten, the login form is back.
    await page.click("#logout");
    await visible(page, "#login");
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.reload();
    await visible(page, "#login");

    expect(thirdParty).toEqual([]);
    expect(consoleErrors).toEqual([]);
    await page.close();
  }, 180_000);

  test("without the stats API (a server older than it) the statistics views say so and the rest still works", async () => {
    const page = await browser.context.newPage();
    // FAKE, named: the browser is answered 404 for the stats routes, as by a cidgate without them.
    await page.route("**/v3/x402/stats**", (route) =>
      route.fulfill({
        status: 404,
        contentType: "application/json",
        body: '{"error":{"code":"not_found","message":"no such route"}}',
      }),
    );
    await page.goto(`${stack.url}/dashboard`);
    await page.fill("#token", await createToken(STACK_JWT_SECRET, { scopes: ["read"], ttlSeconds: 600 }));
    await page.press("#token", "Enter");
    await text(page, "#revenue-chart", /does not offer GET \/v3\/x402\/stats/);
    await text(page, "#sales-table", /does not offer GET \/v3\/x402\/stats/);
    await count(page, '#payments-table a[href^="https://sepolia.basescan.org/tx/0x"]', 2);
    await count(page, '#attention-list li[data-kind="unconfirmed"]', 1);
    await shoot(page, "no-stats");
    await page.close();
  }, 60_000);

  test("a read-only token sees everything and cannot revoke; the page sends a strict CSP", async () => {
    const page = await browser.context.newPage();
    const res = await page.goto(`${stack.url}/dashboard`);
    expect(res!.headers()["content-security-policy"]).toContain("script-src 'self'");
    expect(res!.headers()["set-cookie"]).toBeUndefined();
    const token = await createToken(STACK_JWT_SECRET, { scopes: ["read"], ttlSeconds: 600 });
    await page.fill("#token", token);
    await page.press("#token", "Enter");
    await visible(page, "#app");
    await text(page, "#entitlements-note", /write scope/);
    expect(await page.locator("#entitlements-table tbody button").first().isDisabled()).toBe(true);
    await page.close();
  }, 60_000);
});
