/**
 * The request log as the server factory (src/server.ts) serves the app:
 * the gateway's routes on Bun's router and everything else through the
 * app, both behind withRequestLog. One line per request, on every route, the gateway
 * included; never a header, a query string or a proof.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Facilitator } from "../../src/facilitator/types";
import { createLogger, withRequestLog } from "../../src/http/logging";
import { type RunningServer, startServer } from "../../src/server";
import { addContent, type Fixture, fixture, JWT_SECRET, newAccount, price } from "../gateway/fixtures";

// The 402 and forged-proof paths never reach a facilitator: any call fails the test.
const unusedFacilitator: Facilitator = {
  verify: () => Promise.reject(new Error("facilitator called")),
  settle: () => Promise.reject(new Error("facilitator called")),
  supported: () => Promise.reject(new Error("facilitator called")),
};

function capture() {
  const written: string[] = [];
  const destination = { write: (text: string) => void written.push(text) };
  const lines = () =>
    written
      .join("")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { destination, written, lines };
}

let f: Fixture;
let cid: string;
const out = capture();
let server: RunningServer;
let base: string;

beforeAll(async () => {
  f = fixture({ PORT: "0" });
  ({ "a.txt": cid } = await addContent(f, { "a.txt": "paid words\n" }));
  price(f, cid, [{ payTo: newAccount().address, amount: "10000" }]);
  const log = createLogger("info", out.destination);
  server = await startServer({
    settings: f.settings,
    db: f.db,
    stores: f.stores,
    log,
    jwtSecret: JWT_SECRET,
    facilitator: unusedFacilitator,
    pricing: false,
  });
  base = server.url;
});

afterAll(async () => {
  await server?.stop(true);
  f?.cleanup();
});

/** Lines written since `from`, once the current event-loop turn has flushed them. */
async function linesSince(from: number) {
  await Bun.sleep(5);
  return out.lines().slice(from);
}

describe("request log at the server boundary", () => {
  test("the gateway's 402 and 403, a management 401, an unrouted 404: one line each", async () => {
    const from = out.lines().length;
    const forged = Buffer.from(
      JSON.stringify({ x402Version: 1, scheme: "exact", network: "base-sepolia", payload: "secret-proof" }),
    ).toString("base64");
    const answers = [
      await fetch(`${base}/x402/cid/${cid}?token=secret-query`),
      await fetch(`${base}/x402/cid/${cid}`, { method: "HEAD" }),
      await fetch(`${base}/x402/cid/${cid}`, { headers: { "x-payment": forged } }),
      await fetch(`${base}/v3/x402/payment_instructions`, { headers: { authorization: "Bearer secret-token" } }),
      await fetch(`${base}/x402/cid/${cid}/`), // a trailing slash: answered as before, and logged
      await fetch(`${base}/nope`, { headers: { "x-request-id": "caller-7" } }),
    ];
    for (const a of answers) await a.arrayBuffer();
    expect(answers.map((a) => a.status)).toEqual([402, 402, 403, 401, 402, 404]);

    const lines = await linesSince(from);
    expect(lines.map((l) => `${l.method} ${l.path} ${l.status}`)).toEqual([
      `GET /x402/cid/${cid} 402`,
      `HEAD /x402/cid/${cid} 402`,
      `GET /x402/cid/${cid} 403`,
      "GET /v3/x402/payment_instructions 401",
      `GET /x402/cid/${cid}/ 402`,
      "GET /nope 404",
    ]);
    for (const l of lines) {
      expect([l.level, typeof l.time, typeof l.ms, typeof l.requestId]).toEqual([30, "number", "number", "string"]);
    }
    // Each answer carries the id its line has; a caller's plain id is kept.
    expect(answers.map((a) => a.headers.get("x-request-id"))).toEqual(lines.map((l) => l.requestId as string));
    expect(lines[5].requestId).toBe("caller-7");
    expect(new Set(lines.map((l) => l.requestId)).size).toBe(6);
    const all = out.written.join("");
    for (const secret of ["secret-query", "secret-proof", forged, "secret-token"]) expect(all).not.toContain(secret);
  });

  test("an id that is not plain is replaced, not logged", async () => {
    const from = out.lines().length;
    const res = await fetch(`${base}/x402/cid/${cid}`, { headers: { "x-request-id": 'a"b\\c' } });
    await res.arrayBuffer();
    const [line] = await linesSince(from);
    expect(line.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get("x-request-id")).toBe(line.requestId as string);
  });
});

describe("withRequestLog alone", () => {
  test("a handler that throws answers 500 in the error shape, logged, with no internals", async () => {
    const o = capture();
    const log = createLogger("info", o.destination);
    const fetchLogged = withRequestLog(() => {
      throw new Error("db exploded at /secret/path");
    }, log);
    const res = await fetchLogged(new Request("http://x/boom?q=1", { method: "POST" }));
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: { code: "internal_error", message: "internal error" } });
    await Bun.sleep(5);
    const lines = o.lines();
    expect(lines.filter((l) => "method" in l).map((l) => `${l.method} ${l.path} ${l.status}`)).toEqual([
      "POST /boom 500",
    ]);
    expect(o.written.join("")).not.toMatch(/\n\s+at /); // no stack trace
  });

  test("a rejected promise is answered the same way", async () => {
    const o = capture();
    const fetchLogged = withRequestLog(() => Promise.reject(new Error("late")), createLogger("info", o.destination));
    const res = await fetchLogged(new Request("http://x/late"));
    expect(res.status).toBe(500);
    await Bun.sleep(5);
    expect(
      o
        .lines()
        .filter((l) => "method" in l)
        .map((l) => l.status),
    ).toEqual([500]);
  });

  test("above info, no request lines are written", async () => {
    const o = capture();
    const fetchLogged = withRequestLog(() => new Response("ok"), createLogger("warn", o.destination));
    const res = await fetchLogged(new Request("http://x/quiet"));
    expect(res.headers.get("x-request-id")).toBeTruthy();
    await Bun.sleep(5);
    expect(o.written).toEqual([]);
  });

  test("lines of one turn go out in one write, all of them, in order", async () => {
    const o = capture();
    const fetchLogged = withRequestLog(() => new Response("ok"), createLogger("info", o.destination));
    for (let i = 0; i < 50; i++) await fetchLogged(new Request(`http://x/n/${i}`));
    await Bun.sleep(5);
    expect(o.lines().map((l) => l.path)).toEqual(Array.from({ length: 50 }, (_, i) => `/n/${i}`));
    expect(o.written.length).toBeLessThan(50);
  });
});

test("lines still waiting for the end of the turn are written when the process exits", async () => {
  const logging = new URL("../../src/http/logging.ts", import.meta.url).pathname;
  const script = `import { createLogger, withRequestLog } from ${JSON.stringify(logging)};
const f = withRequestLog(() => new Response("ok"), createLogger("info"));
f(new Request("http://x/a")); f(new Request("http://x/b"));
process.exit(0);`;
  const proc = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" });
  const [text, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  expect(code).toBe(0);
  expect(
    text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).path),
  ).toEqual(["/a", "/b"]);
});
