/**
 * A person buys a file in a real browser (Debian's chromium, playwright-core):
 * the paywall page on the devnet, a test wallet announced through EIP-6963
 * that signs for real, the built-in facilitator settling on anvil, and the
 * download saved by the browser. Screenshots of every state go to
 * test-artifacts/paywall/ (375 px and desktop, light and dark).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { generatePrivateKey } from "viem/accounts";
import { localPublicClient } from "../../src/chain/devnet";
import { createTestStack, type TestStack } from "../e2e/stack";
import { browserAvailable, type LaunchedBrowser, launchBrowser } from "../support/browser";
import { installTestWallet, type TestWallet } from "../support/test-wallet";
import { type FacilitatorFaults, facilitatorFaultInjector } from "./fault-injector";

const ARTIFACTS = join(import.meta.dir, "../../test-artifacts/paywall");
const PRICE = 10_000n; // $0.01
// Not text: bytes a text path would mangle (CR LF, NUL, high bytes) must arrive exactly.
const ESSAY = new Uint8Array(Array.from({ length: 70_000 }, (_, i) => (i * 7 + (i >> 8)) % 256));
const MOBILE = { width: 375, height: 812 };
const DESKTOP = { width: 1280, height: 860 };
const BASE_MAINNET = 8453;

const run = browserAvailable("paywall browser tests");
const faults: FacilitatorFaults = { down: false, hold: undefined, loseSettleAnswers: 0, verifies: 0, settles: 0 };
let stack: TestStack;
let browser: LaunchedBrowser;
let essayCid: string;

/** A screenshot for test-artifacts/, and in every state: nothing wider than the window (375 px included). */
async function shoot(page: Page, name: string) {
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(overflow).toBe(0);
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

async function openOffer(
  options: {
    viewport?: { width: number; height: number };
    key?: `0x${string}`;
    startChainId?: number;
    dark?: boolean;
  } = {},
): Promise<{ page: Page; wallet?: TestWallet }> {
  const page = await browser.context.newPage();
  await page.setViewportSize(options.viewport ?? DESKTOP);
  await page.emulateMedia({ colorScheme: options.dark ? "dark" : "light" });
  const wallet = options.key
    ? await installTestWallet(page, {
        privateKey: options.key,
        rpcUrl: stack.devnet.rpcUrl,
        chainId: stack.devnet.chainId,
        startChainId: options.startChainId,
      })
    : undefined;
  const response = await page.goto(`${stack.url}/x402/cid/${essayCid}`);
  expect(response?.status()).toBe(402);
  expect(response?.headers()["payment-required"]).toBeTruthy();
  await page.locator("#pay:not([disabled])").waitFor();
  return { page, wallet };
}

const status = (page: Page) => page.locator("#status");
const paymentsCount = () =>
  stack.db.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM payments WHERE state = 'settled'").get()?.n ?? 0;

async function downloadedBytes(page: Page, start: () => Promise<void>) {
  const [download] = await Promise.all([page.waitForEvent("download", { timeout: 60_000 }), start()]);
  const path = await download.path();
  return { name: download.suggestedFilename(), bytes: new Uint8Array(readFileSync(path)) };
}

describe.skipIf(!run)("a person buys a file in the browser", () => {
  beforeAll(async () => {
    stack = await createTestStack({
      files: { "field-notes.bin": ESSAY },
      amount: String(PRICE),
      buyers: 7,
      config: {
        "site.yaml": "site:\n  name: Ada's field notes\n  logo: brand/logo.svg\nstorefront:\n  list: true\n",
      },
      wrapFacilitator: (real) => facilitatorFaultInjector(real, faults),
    });
    mkdirSync(join(stack.settings.contentDir, "brand"), { recursive: true });
    writeFileSync(
      join(stack.settings.contentDir, "brand/logo.svg"),
      `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#0b7a3b"/><path d="M8 22 16 8l8 14z" fill="#fff"/></svg>`,
    );
    essayCid = stack.cids["field-notes.bin"] as string;
    stack.stores.instructions.update(stack.instruction.id, {
      name: "Field notes, spring",
      description: "Ninety days of birdsong recordings, transcribed and annotated.",
    });
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  }, 60_000);

  test("the offer: name, file, type, size, price, network, seller; no horizontal scroll at 375 px", async () => {
    for (const [label, viewport, dark] of [
      ["mobile", MOBILE, false],
      ["desktop", DESKTOP, false],
      ["mobile-dark", MOBILE, true],
    ] as const) {
      const { page } = await openOffer({ viewport, dark });
      const text = (await page.locator("article").textContent()) ?? "";
      expect(text).toContain("Field notes, spring");
      expect(text).toContain("Ninety days of birdsong");
      expect(text).toContain("field-notes.bin");
      expect(text).toContain("application/octet-stream");
      expect(text).toContain("68.4 KB");
      expect(text).toContain("$0.01");
      expect(text).toContain("0.01 USDC");
      expect(text).toContain("Base Sepolia");
      expect(text).toContain(stack.devnet.seller.address);
      expect(await page.locator("header.site").textContent()).toContain("Ada's field notes");
      expect(
        await page.locator("header.site img").evaluate((img) => (img as HTMLImageElement).naturalWidth),
      ).toBeGreaterThan(0);
      const overflow = await page.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      );
      expect(overflow).toBe(0);
      await shoot(page, `offer-${label}`);
      await page.close();
    }
  }, 60_000);

  test("no wallet: says which wallets work; keyboard reaches Pay and shows focus", async () => {
    const { page } = await openOffer({ viewport: MOBILE });
    // Tab from the top of the page to the Pay button.
    for (let i = 0; i < 10; i++) {
      await page.keyboard.press("Tab");
      if (await page.evaluate(() => document.activeElement?.id === "pay")) break;
    }
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("pay");
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement as Element).outlineStyle);
    expect(outline).not.toBe("none");
    await page.keyboard.press("Enter");
    await page.locator("#status strong", { hasText: "No wallet found" }).waitFor();
    expect(await status(page).textContent()).toContain("MetaMask, Coinbase Wallet or Rabby");
    await shoot(page, "no-wallet-mobile");
    await page.close();
  }, 60_000);

  /** One purchase, watched step by step; `label` names its screenshots. */
  async function buy(buyerIndex: number, label: string, view: { viewport: typeof MOBILE; dark?: boolean }) {
    await browser.context.clearCookies();
    const buyer = stack.devnet.buyers[buyerIndex]!;
    const sellerBefore = await stack.balanceOf(stack.devnet.seller.address);
    const buyerBefore = await stack.balanceOf(buyer.address);
    const { page, wallet } = await openOffer({ ...view, key: buyer.privateKey, startChainId: BASE_MAINNET });
    let release: () => void = () => {};
    faults.hold = new Promise((r) => {
      release = r;
    });
    const download = downloadedBytes(page, async () => {
      await page.click("#pay");
      await page.locator("#status strong", { hasText: "Settling on chain" }).waitFor();
      await shoot(page, `settling-${label}`);
      release();
      faults.hold = undefined;
    });
    const { name, bytes } = await download;
    expect(name).toBe("field-notes.bin");
    expect(bytes).toEqual(ESSAY);
    expect(wallet?.chainId).toBe(stack.devnet.chainId);
    expect(wallet?.calls).toContain("wallet_switchEthereumChain");
    await page.locator("#status strong", { hasText: "Ready" }).waitFor();
    const tx = page.locator("#status a", { hasText: "transaction" });
    const href = await tx.getAttribute("href");
    expect(href).toMatch(/^https:\/\/sepolia\.basescan\.org\/tx\/0x[0-9a-f]{64}$/);
    const receipt = await localPublicClient(stack.devnet.rpcUrl).getTransactionReceipt({
      hash: href?.split("/tx/")[1] as `0x${string}`,
    });
    expect(receipt.status).toBe("success");
    await shoot(page, `done-${label}`);
    expect(await stack.balanceOf(stack.devnet.seller.address)).toBe(sellerBefore + PRICE);
    expect(await stack.balanceOf(buyer.address)).toBe(buyerBefore - PRICE);
    expect(wallet?.calls.filter((c) => c === "eth_signTypedData_v4")).toHaveLength(1);
    await page.close();
  }

  test("pay: switch to Base Sepolia, sign, settle, the download saved with its name and exact bytes; seller paid once", async () => {
    await buy(0, "desktop", { viewport: DESKTOP });
  }, 120_000);

  test("a returning buyer signs in with the wallet and downloads again; no second charge", async () => {
    await browser.context.clearCookies(); // another day, another browser session
    const buyer = stack.devnet.buyers[0]!;
    const sellerBefore = await stack.balanceOf(stack.devnet.seller.address);
    const settledBefore = paymentsCount();
    const { page, wallet } = await openOffer({ viewport: MOBILE, key: buyer.privateKey });
    const { name, bytes } = await downloadedBytes(page, () => page.click("#signin"));
    expect(name).toBe("field-notes.bin");
    expect(bytes).toEqual(ESSAY);
    await page.locator("#status strong", { hasText: "Ready" }).waitFor();
    await shoot(page, "signed-in-mobile");
    expect(wallet?.calls).toContain("personal_sign");
    expect(wallet?.calls).not.toContain("eth_signTypedData_v4");
    expect(await stack.balanceOf(stack.devnet.seller.address)).toBe(sellerBefore);
    expect(paymentsCount()).toBe(settledBefore);
    await page.close();
  }, 60_000);

  test("a wallet that never bought the file is told so when signing in", async () => {
    await browser.context.clearCookies();
    const { page } = await openOffer({ viewport: MOBILE, key: stack.devnet.buyers[3]!.privateKey });
    await page.click("#signin");
    await page.locator("#status strong", { hasText: "has not bought this file" }).waitFor();
    await page.close();
  }, 60_000);

  test("several wallets announced: the buyer picks one, and only that one is asked", async () => {
    await browser.context.clearCookies();
    const page = await browser.context.newPage();
    await page.setViewportSize(MOBILE);
    const wallet = (key: `0x${string}`, name: string) =>
      installTestWallet(page, { privateKey: key, rpcUrl: stack.devnet.rpcUrl, chainId: stack.devnet.chainId, name });
    const first = await wallet(stack.devnet.buyers[1]!.privateKey, "Wallet One");
    const second = await wallet(stack.devnet.buyers[3]!.privateKey, "Wallet Two");
    second.decline.add("eth_signTypedData_v4"); // the person looks at the price and says no
    await page.goto(`${stack.url}/x402/cid/${essayCid}`);
    await page.locator("#pay:not([disabled])").click();
    await page.locator("#wallets button", { hasText: "Wallet One" }).waitFor();
    await shoot(page, "choose-wallet-mobile");
    await page.locator("#wallets button", { hasText: "Wallet Two" }).click();
    await page.locator("#status strong", { hasText: "You declined the signature" }).waitFor();
    expect(first.calls).toEqual([]);
    expect(second.calls).toContain("eth_requestAccounts");
    await page.close();
  }, 60_000);

  test("a wallet without EIP-6963 is reached as window.ethereum", async () => {
    await browser.context.clearCookies();
    const page = await browser.context.newPage();
    const legacy = await installTestWallet(page, {
      privateKey: generatePrivateKey(),
      rpcUrl: stack.devnet.rpcUrl,
      chainId: stack.devnet.chainId,
      inject: "legacy",
    });
    await page.goto(`${stack.url}/x402/cid/${essayCid}`);
    await page.locator("#pay:not([disabled])").click();
    await page.locator("#status strong", { hasText: "Not enough USDC" }).waitFor();
    expect(legacy.calls.slice(0, 2)).toEqual(["eth_requestAccounts", "eth_chainId"]);
    await page.close();
  }, 60_000);

  test("too little USDC: how much is missing, and nothing is signed or charged", async () => {
    await browser.context.clearCookies();
    const sellerBefore = await stack.balanceOf(stack.devnet.seller.address);
    const { page, wallet } = await openOffer({ viewport: MOBILE, key: generatePrivateKey() });
    await page.click("#pay");
    await page.locator("#status strong", { hasText: "Not enough USDC" }).waitFor();
    const text = (await status(page).textContent()) ?? "";
    expect(text).toContain("holds 0 USDC on Base Sepolia");
    expect(text).toContain("Add at least 0.01 USDC ($0.01)");
    expect(text).toContain("Nothing was charged");
    expect(wallet?.calls).not.toContain("eth_signTypedData_v4");
    await shoot(page, "too-little-usdc-mobile");
    expect(await stack.balanceOf(stack.devnet.seller.address)).toBe(sellerBefore);
    await page.close();
  }, 60_000);

  test("a declined signature: its message, nothing charged", async () => {
    await browser.context.clearCookies();
    const buyer = stack.devnet.buyers[1]!;
    const sellerBefore = await stack.balanceOf(stack.devnet.seller.address);
    const { page, wallet } = await openOffer({ viewport: MOBILE, key: buyer.privateKey });
    wallet?.decline.add("eth_signTypedData_v4");
    await page.click("#pay");
    await page.locator("#status strong", { hasText: "You declined the signature" }).waitFor();
    expect(await status(page).textContent()).toContain("Nothing was charged");
    await shoot(page, "declined-mobile");
    expect(await stack.balanceOf(stack.devnet.seller.address)).toBe(sellerBefore);
    await page.close();
  }, 60_000);

  test("the wallet refuses to switch network: its message, nothing charged", async () => {
    await browser.context.clearCookies();
    const { page, wallet } = await openOffer({
      viewport: MOBILE,
      key: stack.devnet.buyers[1]!.privateKey,
      startChainId: BASE_MAINNET,
    });
    wallet?.decline.add("wallet_switchEthereumChain");
    await page.click("#pay");
    await page.locator("#status strong", { hasText: "on another network" }).waitFor();
    expect(await status(page).textContent()).toContain("Switch your wallet to Base Sepolia");
    expect(wallet?.calls).not.toContain("eth_signTypedData_v4");
    await shoot(page, "wrong-network-mobile");
    await page.close();
  }, 60_000);

  test("the facilitator down: its message, nothing charged; Try again later sends the same proof and pays once", async () => {
    await browser.context.clearCookies();
    const buyer = stack.devnet.buyers[2]!;
    const sellerBefore = await stack.balanceOf(stack.devnet.seller.address);
    const { page, wallet } = await openOffer({ viewport: MOBILE, key: buyer.privateKey });
    faults.down = true;
    await page.click("#pay");
    await page.locator("#status strong", { hasText: "payment service is unavailable" }).waitFor();
    expect(await status(page).textContent()).toContain("cannot be charged twice");
    expect(await page.locator("#pay").textContent()).toBe("Try again");
    await shoot(page, "facilitator-down-mobile");
    expect(await stack.balanceOf(stack.devnet.seller.address)).toBe(sellerBefore);

    faults.down = false;
    const { name, bytes } = await downloadedBytes(page, () => page.click("#pay"));
    expect(name).toBe("field-notes.bin");
    expect(bytes).toEqual(ESSAY);
    // One signature for both attempts: the same proof went again, and it was charged once.
    expect(wallet?.calls.filter((c) => c === "eth_signTypedData_v4")).toHaveLength(1);
    expect(await stack.balanceOf(stack.devnet.seller.address)).toBe(sellerBefore + PRICE);
    await page.close();
  }, 120_000);

  test("the settle answer lost after the transfer landed: 'may have been charged'; Try again gets the file, charged once", async () => {
    await browser.context.clearCookies();
    const buyer = stack.devnet.buyers[5]!;
    const sellerBefore = await stack.balanceOf(stack.devnet.seller.address);
    const { page, wallet } = await openOffer({ viewport: MOBILE, key: buyer.privateKey });
    faults.loseSettleAnswers = 1;
    await page.click("#pay");
    await page.locator("#status strong", { hasText: "payment service is unavailable" }).waitFor();
    expect(await status(page).textContent()).toContain("may have been charged");
    await shoot(page, "settle-answer-lost-mobile");
    expect(await stack.balanceOf(stack.devnet.seller.address)).toBe(sellerBefore + PRICE); // it did land

    const { name, bytes } = await downloadedBytes(page, () => page.click("#pay"));
    expect(name).toBe("field-notes.bin");
    expect(bytes).toEqual(ESSAY);
    expect(wallet?.calls.filter((c) => c === "eth_signTypedData_v4")).toHaveLength(1);
    expect(await stack.balanceOf(stack.devnet.seller.address)).toBe(sellerBefore + PRICE);
    await page.close();
  }, 120_000);

  test("the same purchase at 375 px in dark mode", async () => {
    await buy(4, "mobile-dark", { viewport: MOBILE, dark: true });
  }, 120_000);

  test("the storefront lists what is for sale, each linking to its page", async () => {
    await browser.context.clearCookies(); // with the access cookie, the link would download the file
    const page = await browser.context.newPage();
    await page.setViewportSize(MOBILE);
    const response = await page.goto(`${stack.url}/`);
    expect(response?.status()).toBe(200);
    const link = page.locator(`a[href="/x402/cid/${essayCid}"]`);
    expect(await link.textContent()).toContain("Field notes, spring");
    await shoot(page, "storefront-mobile");
    await link.click();
    await page.locator("#pay").waitFor();
    await page.close();
  }, 60_000);

  // Last: it rewrites the file on disk.
  test("the file rewritten while the payment settles: 'your purchase stands', charged once, never 'nothing was charged'", async () => {
    await browser.context.clearCookies();
    const buyer = stack.devnet.buyers[6]!;
    const sellerBefore = await stack.balanceOf(stack.devnet.seller.address);
    const { page } = await openOffer({ viewport: MOBILE, key: buyer.privateKey });
    let release: () => void = () => {};
    faults.hold = new Promise((r) => {
      release = r;
    });
    await page.click("#pay");
    await page.locator("#status strong", { hasText: "Settling on chain" }).waitFor();
    // The creator saves new bytes over the file, in place, while this payment settles.
    const path = join(stack.settings.contentDir, "field-notes.bin");
    writeFileSync(
      path,
      ESSAY.map((b) => b ^ 0xff),
    );
    release();
    faults.hold = undefined;
    await page.locator("#status strong", { hasText: "Paid, but the file is being updated" }).waitFor();
    const text = await status(page).textContent();
    expect(text).toContain("Your purchase stands");
    expect(text).not.toContain("Nothing was charged");
    expect(await page.locator("#pay").isVisible()).toBe(false);
    expect(await page.locator("#signin").isVisible()).toBe(true);
    await shoot(page, "file-changed-mobile");
    expect(await stack.balanceOf(stack.devnet.seller.address)).toBe(sellerBefore + PRICE);
    await page.close();
  }, 120_000);
});
