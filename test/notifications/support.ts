/**
 * A webhook receiver for tests: a real HTTP server on 127.0.0.1, port 0,
 * that records every POST (raw body and headers) and answers what the test
 * says (200 by default; 503 to play a receiver that is down for now).
 */
export interface Received {
  body: string;
  headers: Headers;
}

export function startReceiver(port = 0) {
  const received: Received[] = [];
  let status = 200;
  const waiters: { n: number; resolve: () => void }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port,
    async fetch(request) {
      const body = await request.text();
      if (status === 200) {
        received.push({ body, headers: request.headers });
        for (const w of waiters.splice(0)) {
          if (received.length >= w.n) w.resolve();
          else waiters.push(w);
        }
      }
      return new Response(status === 200 ? "ok" : "down", { status });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/hook`,
    port: server.port,
    received,
    /** What the receiver answers from now on. */
    answer(s: number) {
      status = s;
    },
    /** Resolves once `n` deliveries were accepted (the test's own timeout bounds the wait). */
    until(n: number): Promise<void> {
      if (received.length >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    events: () =>
      received.map((r) => JSON.parse(r.body) as { id: string; type: string; data: Record<string, unknown> }),
    stop: () => server.stop(true),
  };
}

export type Receiver = ReturnType<typeof startReceiver>;
