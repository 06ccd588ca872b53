/**
 * The paywall's own routes: its script, the site logo, the optional
 * storefront at /, /favicon.ico and /robots.txt. The HTML 402 itself is
 * answered by the gateway (gateway/routes.ts) from `Paywall.offerPage`.
 */
import { Elysia } from "elysia";
import { absoluteContentPath, contentRoot } from "../content/paths";
import { errorResponse } from "../http/errors";
import { pageScript } from "./assets";
import { LOGO_PATH, SCRIPT_PATH } from "./page";
import { PAGE_HEADERS, type Paywall } from "./paywall";

/** Paid files are for buyers, not for crawlers; the storefront may be listed. */
const ROBOTS = "User-agent: *\nDisallow: /x402/\nDisallow: /v3/\nAllow: /\n";

/** A 16x16 icon (a coin), so browsers stop asking and nothing outside cidgate is named. */
const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#1652f0"/><text x="8" y="11.5" font-size="10" text-anchor="middle" fill="#fff" font-family="sans-serif">$</text></svg>`;

/** Pages for people, not API: kept out of /openapi. */
const PAGE = { detail: { hide: true } } as const;

export function paywallModule(paywall: Paywall, settings: { contentDir: string }) {
  return new Elysia({ name: "paywall" })
    .get(
      SCRIPT_PATH,
      async ({ request }) => {
        const asset = await pageScript();
        const gzip = /\bgzip\b/.test(request.headers.get("accept-encoding") ?? "");
        return new Response((gzip ? asset.gzip : asset.body) as Uint8Array<ArrayBuffer>, {
          headers: {
            "Content-Type": "text/javascript; charset=utf-8",
            // The page links it by version (`?v=`): a new version is a new URL.
            "Cache-Control": "public, max-age=31536000, immutable",
            ETag: asset.etag,
            Vary: "Accept-Encoding",
            "X-Content-Type-Options": "nosniff",
            ...(gzip ? { "Content-Encoding": "gzip" } : {}),
          },
        });
      },
      PAGE,
    )
    .get(
      LOGO_PATH,
      async () => {
        const logo = await paywall.logo();
        if (!logo) return errorResponse(404, "not_found", "no logo (site.logo in a pricing file, not a file for sale)");
        let file: ReturnType<typeof Bun.file>;
        try {
          file = Bun.file(absoluteContentPath(contentRoot(settings.contentDir), logo));
        } catch {
          return errorResponse(404, "not_found", "the logo is not a content file");
        }
        if (!(await file.exists())) return errorResponse(404, "not_found", "the logo file is missing from content/");
        return new Response(file, {
          headers: { "Cache-Control": "public, max-age=300", "X-Content-Type-Options": "nosniff" },
        });
      },
      PAGE,
    )
    .get(
      "/",
      async () => {
        const html = await paywall.storefront();
        if (html === undefined)
          return errorResponse(404, "not_found", "no storefront (storefront.list in a pricing file)");
        return new Response(html, {
          headers: { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache", ...PAGE_HEADERS },
        });
      },
      PAGE,
    )
    .get(
      "/favicon.ico",
      () =>
        new Response(FAVICON, {
          headers: { "Content-Type": "image/svg+xml", "Cache-Control": "public, max-age=86400" },
        }),
      PAGE,
    )
    .get(
      "/robots.txt",
      () =>
        new Response(ROBOTS, {
          headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "public, max-age=86400" },
        }),
      PAGE,
    );
}
