/**
 * A round-robin load balancer written for the replica tests: Bun.serve on a
 * free loopback port handing each request to the next replica in turn, as a
 * plain HTTP balancer without sticky sessions does. Request and response
 * bodies stream through untouched (no decompression, no buffering); the
 * hop-by-hop headers are dropped as RFC 9110 asks of a proxy. The answer
 * names the replica that gave it (X-Served-By).
 *
 * A replica that refuses the connection (killed) answers the client 502: a
 * balancer's health check takes a dead replica out (`remove`), the requests
 * already sent to it are lost, as they would be in front of real servers.
 */

/** The replica that answered, as balancers name it for debugging (HAProxy's, nginx's upstream_addr). */
export const SERVED_BY = "x-served-by";

const HOP_BY_HOP = ["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te", "trailer"];

function forwardable(headers: Headers): Headers {
  const out = new Headers(headers);
  for (const h of HOP_BY_HOP) out.delete(h);
  out.delete("host"); // the replica's own, set by fetch
  return out;
}

export interface RoundRobinProxy {
  url: string;
  /** The replicas' origins, in turn order. */
  backends: string[];
  /** Requests handed to each origin. */
  sent: Map<string, number>;
  /** Takes a replica out of the rotation (the balancer's health check saw it die). */
  remove(origin: string): void;
  stop(): Promise<void>;
}

export function startRoundRobinProxy(backends: string[] = []): RoundRobinProxy {
  let turn = 0;
  const proxy: RoundRobinProxy = {
    url: "",
    backends: [...backends],
    sent: new Map(),
    remove(origin) {
      proxy.backends = proxy.backends.filter((b) => b !== origin);
    },
    async stop() {
      await server.stop(true);
    },
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 120, // a settlement held back by the tests' fault injector takes seconds
    async fetch(request) {
      const list = proxy.backends;
      if (list.length === 0) return new Response("no replica", { status: 502 });
      const origin = list[turn++ % list.length];
      proxy.sent.set(origin, (proxy.sent.get(origin) ?? 0) + 1);
      const { pathname, search } = new URL(request.url);
      try {
        const answer = await fetch(`${origin}${pathname}${search}`, {
          method: request.method,
          headers: forwardable(request.headers),
          body: request.body,
          redirect: "manual",
          decompress: false, // the client sees the replica's bytes and Content-Encoding as sent
        });
        const headers = forwardable(answer.headers);
        headers.set(SERVED_BY, origin);
        return new Response(answer.body, { status: answer.status, statusText: answer.statusText, headers });
      } catch {
        return new Response("replica unreachable", { status: 502 });
      }
    },
  });
  proxy.url = `http://127.0.0.1:${server.port}`;
  return proxy;
}
