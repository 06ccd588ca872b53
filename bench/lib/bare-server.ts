/**
 * The yardstick of bench/gateway.ts: a bare Bun.serve in its own process
 * that answers GET /402 with the exact status, headers and body cidgate sent
 * for the same CID (captured by the bench), and GET /file with Bun.file of
 * the same 100 MiB file. No routing framework, no database, no checks: the
 * fastest this machine can answer the same bytes.
 *
 * Input: env BARE_402 (JSON {headers, body}), BARE_FILE (absolute path),
 * BARE_FILE_TYPE. Output: `READY {"url"}` on stderr. Ends on SIGTERM or
 * when stdin closes.
 */
const captured = JSON.parse(process.env.BARE_402 ?? "null") as { headers: Record<string, string>; body: string } | null;
if (!captured) throw new Error("bare-server: BARE_402 is not set");
const filePath = process.env.BARE_FILE;
if (!filePath) throw new Error("bare-server: BARE_FILE is not set");
const fileType = process.env.BARE_FILE_TYPE ?? "application/octet-stream";

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(req) {
    const path = req.url.slice(req.url.indexOf("/", 8));
    if (path === "/402") return new Response(captured.body, { status: 402, headers: captured.headers });
    if (path === "/file") return new Response(Bun.file(filePath, { type: fileType }));
    return new Response("not found", { status: 404 });
  },
});

function stop() {
  server.stop(true);
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
void (async () => {
  for await (const _ of Bun.stdin.stream()) {
    // nothing is ever sent; we only wait for the end
  }
  stop();
})();

console.error(`READY ${JSON.stringify({ url: `http://127.0.0.1:${server.port}` })}`);
