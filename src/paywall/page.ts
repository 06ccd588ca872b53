/**
 * The HTML of the 402 a browser gets (paywall) and of the storefront.
 * Rendered once per offer and site settings and kept (the 402 is the hot
 * path, HTML or JSON); every value from the catalog is escaped, and the
 * offer goes to the script as a JSON block, never as markup.
 */
import { basename } from "node:path";
import type { PricedContent } from "../gateway/catalog";
import { escapeHtml, formatDollars, formatSize, formatUnits } from "./format";
import { WALLET_NETWORKS } from "./networks";
import type { OfferData } from "./offer-data";
import type { Site } from "./site";
import { CSS } from "./styles";

/** Where the page script is served; `v` changes with its source, so it may be cached for good. */
export const SCRIPT_PATH = "/paywall/app.js";
export const LOGO_PATH = "/paywall/logo";

function shell(site: Site, title: string, body: string, script?: string): string {
  const logo = site.logo ? `<img src="${LOGO_PATH}" alt="">` : "";
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light dark"><meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>${CSS}</style>${script ? `<script src="${script}" defer></script>` : ""}</head><body><header class="site">${site.storefront ? `<a href="/">${logo}<span>${escapeHtml(site.name)}</span></a>` : `${logo}<span>${escapeHtml(site.name)}</span>`}</header><main>${body}</main><footer>Paid with USDC over x402. Your wallet signs a transfer of exactly this price; nothing else is asked.</footer></body></html>`;
}

/** JSON inside a <script> block: no "</script>" or "<!--" can end it early. */
function jsonBlock(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c");
}

export function fileName(item: PricedContent): string {
  return basename(item.file.absolutePath);
}

export function offerData(item: PricedContent): OfferData {
  return {
    resource: item.required.v2.resource,
    path: `/x402/cid/${item.cid}`,
    fileName: fileName(item),
    size: item.file.size,
    browserCanBuy: item.instruction.access !== "once",
    accepts: item.required.accepts.map((a) => {
      const network = WALLET_NETWORKS[a.network];
      return {
        accepted: a.v2,
        chainId: Number(a.v2.network.slice("eip155:".length)),
        label: network.label,
        rpcUrl: network.rpcUrl,
        explorer: network.explorer,
        usdc: formatUnits(a.amount, 6),
      };
    }),
  };
}

export function renderOffer(item: PricedContent, site: Site, scriptUrl: string): string {
  const data = offerData(item);
  const { instruction, file } = item;
  const first = data.accepts[0];
  const title = instruction.name || data.fileName;
  const prices = data.accepts
    .map(
      (a) =>
        `<dt>Network</dt><dd>${escapeHtml(a.label)}</dd><dt>Seller</dt><dd><code>${escapeHtml(a.accepted.payTo)}</code></dd>`,
    )
    .join("");
  const body = `<article class="card"><h1>${escapeHtml(title)}</h1>${
    instruction.description && instruction.description !== title
      ? `<p class="desc">${escapeHtml(instruction.description)}</p>`
      : ""
  }<dl><dt>File</dt><dd>${escapeHtml(data.fileName)}</dd><dt>Type</dt><dd>${escapeHtml(file.mediaType)}</dd><dt>Size</dt><dd>${escapeHtml(formatSize(file.size))}</dd></dl><p class="price" id="price">${
    first ? `${formatDollars(first.usdc)} <small>${escapeHtml(first.usdc)} USDC</small>` : ""
  }</p><dl>${prices}</dl>${
    data.browserCanBuy
      ? ""
      : `<p class="status" data-kind="error"><strong>Sold to programs only.</strong> Each payment here is good for one download, which only an x402 client (a script or an agent) can take; a browser cannot buy it.</p>`
  }<div class="actions"${data.browserCanBuy ? "" : " hidden"}><button type="button" class="primary" id="pay" disabled>Pay with wallet</button><button type="button" class="secondary" id="signin" disabled>Bought it already? Sign in with wallet</button></div><div class="wallets" id="wallets" hidden></div><ol class="steps" id="steps" hidden><li data-step="sign">Waiting for your signature</li><li data-step="settle">Settling on chain</li><li data-step="ready">Ready: your download starts</li></ol><div class="status" id="status" role="status" aria-live="polite"></div><noscript><p class="status" data-kind="error"><strong>Paying needs JavaScript</strong> and a browser wallet (MetaMask, Coinbase Wallet, Rabby or any other). Turn JavaScript on for this page.</p></noscript></article><script type="application/json" id="offer">${jsonBlock(data)}</script>`;
  return shell(site, `${title} · ${site.name}`, body, scriptUrl);
}

export function renderStorefront(items: PricedContent[], site: Site): string {
  const list = items
    .map((item) => {
      const first = item.required.accepts[0];
      const usdc = first ? formatUnits(first.amount, 6) : "";
      const title = item.instruction.name || fileName(item);
      return `<li class="card"><a href="/x402/cid/${escapeHtml(item.cid)}"><h2>${escapeHtml(title)}</h2><p>${escapeHtml(fileName(item))} · ${escapeHtml(formatSize(item.file.size))}${usdc ? ` · ${escapeHtml(formatDollars(usdc))}` : ""}</p></a></li>`;
    })
    .join("");
  const body = `<h1>For sale</h1>${items.length === 0 ? "<p>Nothing is for sale yet.</p>" : `<ul class="items">${list}</ul>`}`;
  return shell(site, site.name, body);
}
