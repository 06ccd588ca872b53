/**
 * The buyer-facing pages as one service: the HTML 402 of each offer (kept
 * per offer and site settings, like the JSON one), the Content-Disposition
 * of each served file, and the storefront. No HTTP routing here (routes.ts).
 */
import type { ContentStore } from "../content/store";
import type { Catalog, PricedContent } from "../gateway/catalog";
import type { Presentation } from "../pricing/load";
import { pageScript, SCRIPT_VERSION } from "./assets";
import { renderOffer, renderStorefront, SCRIPT_PATH } from "./page";
import { contentDisposition, resolveSite, type Site } from "./site";
import { CSS_HASH } from "./styles";

export interface PaywallDeps {
  publicUrl: string;
  /** The pricing files' `site:` and `storefront:` (none when pricing is off). */
  presentation: () => Presentation;
  catalog: Pick<Catalog, "lookup">;
  content: Pick<ContentStore, "list">;
}

/**
 * What every page may load: itself, its script, its logo, and calls back to
 * cidgate. Nothing from anywhere else, enforced by the browser.
 */
export const PAGE_HEADERS = {
  "Content-Security-Policy": `default-src 'none'; script-src 'self'; style-src '${CSS_HASH}'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
} as const;

/** The storefront lists at most this many files (one page; it is a shop window, not an index). */
const STOREFRONT_LIMIT = 500;

export function createPaywall(deps: PaywallDeps) {
  // Bundled now, off the request path, so the first buyer's page does not wait for it; a failure
  // is reported by the script's own route (and the build retried there).
  pageScript().catch(() => {});
  let presentation: Presentation | undefined;
  let site: Site = resolveSite({}, deps.publicUrl);
  const scriptUrl = `${SCRIPT_PATH}?v=${SCRIPT_VERSION}`;
  // Kept as UTF-8 bytes: a 6 KB string would be encoded again for every 402.
  const pages = new WeakMap<PricedContent, { site: Site; html: Uint8Array<ArrayBuffer> }>();
  const utf8 = new TextEncoder();
  const dispositions = new WeakMap<PricedContent, { site: Site; value: string }>();

  /** The current site settings; a new object only when the pricing files changed them. */
  function currentSite(): Site {
    const now = deps.presentation();
    if (now !== presentation) {
      presentation = now;
      site = resolveSite(now, deps.publicUrl);
    }
    return site;
  }

  return {
    currentSite,
    /** The HTML of this offer's 402 (rendered once per offer and site settings). */
    offerPage(item: PricedContent): Uint8Array<ArrayBuffer> {
      const s = currentSite();
      let page = pages.get(item);
      if (page?.site !== s) {
        page = { site: s, html: utf8.encode(renderOffer(item, s, scriptUrl)) };
        pages.set(item, page);
      }
      return page.html;
    },
    /** Content-Disposition of the served file: its real name; inline only for media and PDF when the site says so. */
    disposition(item: PricedContent): string {
      const s = currentSite();
      let d = dispositions.get(item);
      if (d?.site !== s) {
        d = { site: s, value: contentDisposition(item.file.absolutePath, item.file.mediaType, s.disposition) };
        dispositions.set(item, d);
      }
      return d.value;
    },
    /**
     * The logo's path under content/, unless none is set or it is a file for sale (a logo
     * setting must not give a paid file away). One pass over the index: the browser keeps the
     * logo for minutes, and the page is not waiting on it.
     */
    async logo(): Promise<string | undefined> {
      const logo = currentSite().logo;
      if (logo === undefined) return undefined;
      const indexed = deps.content.list().find((f) => f.path === logo);
      return indexed && (await deps.catalog.lookup(indexed.cid)) ? undefined : logo;
    },
    /** The storefront's HTML, or undefined when the creator did not ask for one. */
    async storefront(): Promise<string | undefined> {
      const s = currentSite();
      if (!s.storefront) return undefined;
      const items: PricedContent[] = [];
      const seen = new Set<string>();
      for (const { cid } of deps.content.list()) {
        if (items.length >= STOREFRONT_LIMIT) break;
        if (seen.has(cid)) continue;
        seen.add(cid);
        const item = await deps.catalog.lookup(cid);
        if (item) items.push(item);
      }
      return renderStorefront(items, s);
    },
  };
}

export type Paywall = ReturnType<typeof createPaywall>;
