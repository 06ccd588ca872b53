/**
 * What the creator says about the buyer-facing pages (pricing YAML `site:`
 * and `storefront:`), resolved against defaults: the site name, the logo
 * (a file under the content folder), and whether media and PDF open in the
 * browser or are saved.
 */
import { basename } from "node:path";
import type { Presentation } from "../pricing/load";

export type Disposition = "attachment" | "inline";

export interface Site {
  name: string;
  /** Relative to the content folder; served at /paywall/logo. */
  logo?: string;
  disposition: Disposition;
  storefront: boolean;
}

export function resolveSite(presentation: Presentation, publicUrl: string): Site {
  const { site, storefront } = presentation;
  return {
    name: site?.name ?? new URL(publicUrl).host,
    logo: site?.logo,
    disposition: site?.disposition ?? "attachment",
    storefront: storefront?.list ?? false,
  };
}

/** Opened by the browser itself when asked to show it inline; anything else is always saved. */
export function showsInline(mediaType: string): boolean {
  return /^(image|audio|video)\//.test(mediaType) || mediaType === "application/pdf";
}

/**
 * `Content-Disposition` for a served file: its real name, so the download
 * is saved as what the creator put in content/ (RFC 6266: an ASCII
 * `filename` for old agents and the exact name in `filename*`).
 */
export function contentDisposition(absolutePath: string, mediaType: string, disposition: Disposition): string {
  const name = basename(absolutePath);
  const kind = disposition === "inline" && showsInline(mediaType) ? "inline" : "attachment";
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}
