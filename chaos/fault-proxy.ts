/**
 * A FAULT INJECTOR, the suite's only fake: an HTTP proxy between cidgate and
 * a REAL facilitator (on the devnet). /verify and /supported pass through;
 * /settle does what `mode` says, so a case can play a facilitator that lies,
 * loses track of a settlement it made, drops answers or is slow:
 *
 * - `pass`: forwarded untouched;
 * - `lie`: never forwarded; answers `{"success":true,"transaction":<random>}`
 *   (nothing was settled);
 * - `failAfterSettle`: forwarded (the real facilitator settles on chain), then
 *   answered `success:false, errorReason:"invalid_transaction_state"` with the
 *   real transaction hash;
 * - `http400AfterSettle`: forwarded, then HTTP 400
 *   `{"success":false,"errorReason":"unexpected_settle_error"}` without a hash;
 * - `drop`: forwarded, and the answer never comes (the connection hangs
 *   until the caller gives up);
 * - `blackhole`: never forwarded, never answered (the settle never reached the chain);
 * - `refuseWhileSettling`: forwarded, and without waiting for it, HTTP 400
 *   `unexpected_settle_error` after `delayMs` (the transaction may still be in flight);
 * - `delay`: forwarded, and the answer held back `delayMs` (a slow receipt: a
 *   window in which the money has moved and cidgate does not know it yet).
 *
 * `settled` lists the real settlement transactions it saw succeed.
 */
export type FaultMode =
  | "pass"
  | "lie"
  | "failAfterSettle"
  | "http400AfterSettle"
  | "refuseWhileSettling"
  | "drop"
  | "blackhole"
  | "delay";

export interface FaultProxy {
  url: string;
  mode: FaultMode;
  delayMs: number;
  /** Real successful settlements forwarded (their transaction hashes). */
  settled: string[];
  /** /settle calls received. */
  settleCalls: number;
  stop(): Promise<void>;
}

const randomTx = () =>
  `0x${Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0")).join("")}`;

export function startFaultProxy(target: string, mode: FaultMode = "pass"): FaultProxy {
  const base = target.replace(/\/+$/, "");
  const hanging = new Set<() => void>();
  const proxy: FaultProxy = {
    url: "",
    mode,
    delayMs: 0,
    settled: [],
    settleCalls: 0,
    async stop() {
      for (const release of hanging) release();
      await server.stop(true);
    },
  };

  async function forward(request: Request, path: string, body: string | undefined) {
    const res = await fetch(`${base}${path}`, {
      method: request.method,
      headers: { "content-type": "application/json", accept: "application/json" },
      body,
    });
    return { status: res.status, text: await res.text() };
  }

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      const body = request.method === "POST" ? await request.text() : undefined;
      if (path !== "/settle") {
        const r = await forward(request, path, body);
        return new Response(r.text, { status: r.status, headers: { "content-type": "application/json" } });
      }
      proxy.settleCalls++;
      const m = proxy.mode;
      const network = (() => {
        try {
          return JSON.parse(body ?? "{}")?.paymentRequirements?.network ?? "";
        } catch {
          return "";
        }
      })();
      if (m === "lie") return Response.json({ success: true, transaction: randomTx(), network });
      const hang = () =>
        new Promise<Response>((resolve) => {
          const done = () => resolve(new Response(null, { status: 504 }));
          hanging.add(done);
          request.signal.addEventListener("abort", done);
        });
      if (m === "blackhole") return hang();
      const forwarded = forward(request, path, body);
      if (m === "refuseWhileSettling") {
        void forwarded.then(
          (r) => {
            const answer = JSON.parse(r.text);
            if (answer.success && answer.transaction) proxy.settled.push(answer.transaction);
          },
          () => {},
        );
        await Bun.sleep(proxy.delayMs);
        return Response.json(
          { success: false, errorReason: "unexpected_settle_error", transaction: "", network },
          { status: 400 },
        );
      }
      const r = await forwarded;
      let answer: { success?: boolean; transaction?: string; payer?: string } = {};
      try {
        answer = JSON.parse(r.text);
      } catch {}
      if (answer.success && answer.transaction) proxy.settled.push(answer.transaction);
      if (m === "delay") await Bun.sleep(proxy.delayMs);
      if (m === "failAfterSettle")
        return Response.json({
          success: false,
          errorReason: "invalid_transaction_state",
          transaction: answer.transaction ?? "",
          network,
          payer: answer.payer,
        });
      if (m === "http400AfterSettle")
        return Response.json(
          { success: false, errorReason: "unexpected_settle_error", transaction: "", network },
          { status: 400 },
        );
      // Hang until the caller gives up (its own timeout) or the proxy stops.
      if (m === "drop") return hang();
      return new Response(r.text, { status: r.status, headers: { "content-type": "application/json" } });
    },
  });
  proxy.url = `http://127.0.0.1:${server.port}`;
  return proxy;
}
