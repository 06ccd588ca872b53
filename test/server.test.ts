/**
 * The server factory in-process, as `npm start` runs it: content indexed and
 * pricing reconciled before the first request, the watchers live, the public
 * URL of a PORT=0 server taken from the bound port, and stop() letting go of
 * the port and the database. (src/index.ts itself only reads the settings,
 * calls startServer and handles signals: test/boot.test.ts runs it as a process.)
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cidOfBytes } from "../src/content/cid";
import { createLogger } from "../src/http/logging";
import { type RunningServer, startServer } from "../src/server";
import { loadSettings } from "../src/settings";
import { instruction, PAY_TO, pricingFile, tempDirs } from "./pricing/helpers";
import { eventually } from "./support/eventually";

const ARTICLE = "# An article sold by a pricing file\n";
let dirs: ReturnType<typeof tempDirs>;
let running: RunningServer;
let cid: string;

beforeAll(async () => {
  dirs = tempDirs();
  cid = (await cidOfBytes(new TextEncoder().encode(ARTICLE))).toString();
  dirs.write("article.md", ARTICLE, dirs.contentDir);
  dirs.write("shop.yaml", pricingFile(instruction("article", { files: ["article.md"], price: "$0.01" })));
  const settings = loadSettings({
    PORT: "0",
    CIDGATE_DB: `${dirs.base}/cidgate.db`,
    CIDGATE_CONFIG_DIR: dirs.configDir,
    CIDGATE_CONTENT_DIR: dirs.contentDir,
    JWT_SECRET: "server-test-secret-server-test-secret-01",
    LOG_LEVEL: "silent",
  });
  running = await startServer({ settings, log: createLogger("silent") });
});
afterAll(async () => {
  await running?.stop(true);
  dirs?.cleanup();
});

const priceOf = async () => {
  const res = await fetch(`${running.url}/x402/cid/${cid}`);
  return res.status === 402 ? ((await res.json()) as any).accepts[0].maxAmountRequired : res.status;
};

describe("startServer", () => {
  test("sells what the pricing files price from the first request, with resource URLs on the bound port", async () => {
    expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(running.url).not.toEndWith(":0");
    expect(running.publicUrl).toBe(running.url);
    const res = await fetch(`${running.url}/x402/cid/${cid}`);
    expect(res.status).toBe(402);
    const body = (await res.json()) as any;
    expect(body.accepts[0]).toMatchObject({
      maxAmountRequired: "10000",
      payTo: PAY_TO,
      resource: `${running.url}/x402/cid/${cid}`,
    });
    expect(res.headers.get("x-request-id")).toBeTruthy(); // the request log wraps the gateway's routes
  });

  test("a saved pricing file is served without a restart (the watchers run)", async () => {
    dirs.write("shop.yaml", pricingFile(instruction("article", { files: ["article.md"], price: "$0.02" })));
    await eventually(async () => (await priceOf()) === "20000", "the new price served");
  });

  test("the management API is mounted, behind its tokens", async () => {
    const res = await fetch(`${running.url}/v3/x402/payment_instructions`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe("unauthorized");
  });

  test("management routes match the real path whatever the Host header (Elysia reads the path from index 11)", async () => {
    const { port } = new URL(running.url);
    const raw = async (host: string, path: string) => {
      // fetch() sets Host from the URL: a raw HTTP/1.1 request sends the Host a client may really send
      const socket = await Bun.connect({
        hostname: "127.0.0.1",
        port: Number(port),
        socket: {
          data(_s, chunk) {
            received += Buffer.from(chunk).toString();
          },
          close() {
            done();
          },
        },
      });
      let received = "";
      let done!: () => void;
      const closed = new Promise<void>((resolve) => (done = resolve));
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      await closed;
      return Number(received.split(" ")[1]);
    };
    for (const host of ["a", "abc", "x", "[::1]", "example.com"]) {
      expect(await raw(host, "/v3/x402/payment_instructions")).toBe(401); // found, and asks for a token
      expect(await raw(host, "/x402/v3/x402/config")).toBe(404); // never served as /v3/x402/config
    }
  });

  test("stop() releases the port and closes the database it opened", async () => {
    const { url, contentDb } = running;
    await running.stop(true);
    await expect(fetch(`${url}/x402/cid/${cid}`)).rejects.toThrow();
    expect(() => contentDb.sqlite.query("SELECT 1").get()).toThrow();
  });
});
