/**
 * What a reverse proxy says about the original request: `X-Forwarded-Proto`
 * (and the standard `Forwarded: proto=`), read only when TRUST_PROXY is on,
 * since anyone can send these headers to a server reached directly. The
 * client's address (`X-Forwarded-For`) is http/client-address.ts's.
 *
 * PUBLIC_URL stays the one source of the public origin: the 402's
 * `resource` URLs, the sign-in-with-x domain and uri, and whether cookies
 * are `Secure` all come from it, never from a request's headers (a forged
 * `Host` or `X-Forwarded-Host` would otherwise put an attacker's origin in
 * what buyers sign, X402.md trap 11, and the 402s are prebuilt per offer
 * anyway). What the forwarded protocol is used for is the check that
 * PUBLIC_URL is right: requests arriving over https through the proxy while
 * PUBLIC_URL says http means every 402 names the wrong URL, so the server
 * says so once, at warn, naming the fix.
 */
import type { Logger } from "./logging";

/** The protocol the client used, as the trusted proxy reports it ("https", "http"), lower case; undefined if it says nothing. */
export function forwardedProto(headers: Headers): string | undefined {
  const xfp = headers.get("x-forwarded-proto");
  // A chain of proxies appends: "https, http"; the first is the client's.
  if (xfp) return xfp.split(",")[0].trim().toLowerCase() || undefined;
  const forwarded = headers.get("forwarded");
  if (!forwarded) return undefined;
  const m = /(?:^|[;,\s])proto="?([A-Za-z][A-Za-z0-9+.-]*)"?/i.exec(forwarded.split(",")[0]);
  return m?.[1].toLowerCase();
}

/**
 * A per-request observer for the server's wrapper, or undefined when there
 * is nothing to watch (TRUST_PROXY off, or PUBLIC_URL already https): then
 * it costs nothing. Warns once, then stops looking.
 */
export function publicUrlCheck(opts: {
  trustProxy: boolean;
  publicUrl: string;
  log: Pick<Logger, "warn">;
}): ((request: Request) => void) | undefined {
  if (!opts.trustProxy || opts.publicUrl.startsWith("https:")) return undefined;
  let warned = false;
  return (request) => {
    if (warned || forwardedProto(request.headers) !== "https") return;
    warned = true;
    opts.log.warn(
      { publicUrl: opts.publicUrl, forwardedProto: "https" },
      "requests arrive over https through the proxy but PUBLIC_URL is http: every 402 names an http resource; set PUBLIC_URL to the https origin buyers use",
    );
  };
}
