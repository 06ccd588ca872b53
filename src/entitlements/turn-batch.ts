/**
 * Calls that arrive in the same turn of the event loop, written together: the
 * first call of a turn schedules one write (after the turn's I/O, so every
 * call that reached this point meanwhile shares it), and each caller gets its
 * own answer from that write, or the write's error. At most `max` calls a
 * write; the rest go in the next turn's. Both nonce stores batch sign-ins
 * this way (siwx-nonces.ts, siwx-nonces-pg.ts).
 */
export function turnBatcher<I, R>(write: (batch: I[]) => R[] | Promise<R[]>, max: number): (item: I) => Promise<R> {
  type Waiting = { item: I; resolve(result: R): void; reject(error: unknown): void };
  let waiting: Waiting[] = [];

  async function flush() {
    const batch = waiting.length > max ? waiting.splice(0, max) : waiting;
    if (batch === waiting) waiting = [];
    if (waiting.length > 0) setImmediate(flush);
    let results: R[];
    try {
      results = await write(batch.map((w) => w.item));
    } catch (error) {
      for (const w of batch) w.reject(error);
      return;
    }
    for (let i = 0; i < batch.length; i++) batch[i].resolve(results[i]);
  }

  return (item) =>
    new Promise<R>((resolve, reject) => {
      if (waiting.length === 0) setImmediate(flush);
      waiting.push({ item, resolve, reject });
    });
}
