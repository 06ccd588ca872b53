/**
 * The client's address, for limits kept per client (gateway/verify-limiter.ts).
 *
 * By default it is the peer of the TCP connection. Behind a reverse proxy
 * that peer is the proxy for everyone, so with TRUST_PROXY on the address is
 * read from X-Forwarded-For: its last entry, the one the proxy itself
 * appended (entries before it are whatever the client chose to send, and a
 * client could otherwise pick a fresh address per request). With TRUST_PROXY
 * off the header is ignored: anyone can send it.
 */

/** What Bun's server tells about a request's peer. */
export interface PeerSource {
  requestIP(request: Request): { address: string } | null;
}

/** The last non-empty entry of X-Forwarded-For, without brackets or a port; undefined when none. */
export function lastForwardedFor(header: string | null): string | undefined {
  if (!header) return undefined;
  const entries = header.split(",");
  for (let i = entries.length - 1; i >= 0; i--) {
    let entry = entries[i].trim();
    if (!entry) continue;
    // "[2001:db8::1]:443" and "203.0.113.7:8080" carry a port; a bare IPv6 address has colons but no port.
    if (entry.startsWith("[")) entry = entry.slice(1, entry.indexOf("]") > 0 ? entry.indexOf("]") : undefined);
    else if (/^[\d.]+:\d+$/.test(entry)) entry = entry.slice(0, entry.lastIndexOf(":"));
    return entry.length <= 64 ? entry.toLowerCase() : undefined;
  }
  return undefined;
}

/**
 * Makes the function that names a request's client: `server` is the Bun
 * server that received the request (undefined: only X-Forwarded-For, when trusted).
 */
export function clientAddressOf(server: PeerSource | undefined, trustProxy: boolean) {
  return (request: Request): string | undefined => {
    if (trustProxy) {
      const forwarded = lastForwardedFor(request.headers.get("x-forwarded-for"));
      if (forwarded) return forwarded;
    }
    try {
      return server?.requestIP(request)?.address ?? undefined;
    } catch {
      return undefined; // a request this server did not receive (rebuilt, or handed in by a test)
    }
  };
}

export type ClientAddress = ReturnType<typeof clientAddressOf>;
