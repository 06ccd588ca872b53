/**
 * The flooding client of bench/abuse.ts, in a worker thread of its own so its
 * HTTP client work does not sit on the server's event loop: sends each
 * pre-signed header once, `concurrency` at a time and at most `rate` a
 * second (0: as fast as the server answers), and posts back the count of
 * answers by status.
 */
/** This worker's side of the channel (Bun gives a worker `self`; the DOM lib types it as a Window). */
const port = globalThis as unknown as Worker;

port.onmessage = async (event: MessageEvent) => {
  const { url, headers, concurrency, client, rate } = event.data as {
    url: string;
    headers: string[];
    concurrency: number;
    client: string;
    rate: number;
  };
  const t0 = performance.now();
  const statuses: Record<number, number> = {};
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < headers.length) {
        const i = next++;
        const header = headers[i];
        const due = rate > 0 ? t0 + (i * 1000) / rate - performance.now() : 0;
        if (due > 1) await Bun.sleep(due);
        const res = await fetch(url, { headers: { "PAYMENT-SIGNATURE": header, "X-Forwarded-For": client } });
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
    }),
  );
  port.postMessage(statuses);
};
