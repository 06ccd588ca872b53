/**
 * /healthz and /readyz on the production server: ready with the devnet and
 * the built-in facilitator up; not ready, naming the check, when the chain
 * behind the facilitator is gone (stopped for real), when a remote
 * facilitator does not answer (a closed port), or before pricing has loaded.
 */
import { expect, test } from "bun:test";
import { Elysia } from "elysia";
import { openDb } from "../../src/db/client";
import { createFacilitator } from "../../src/facilitator/create";
import { healthModule } from "../../src/http/health";
import type { Pricing } from "../../src/pricing/service";
import { loadSettings } from "../../src/settings";
import { createStores } from "../../src/stores";
import { createTestStack } from "./stack";

test("ready with the chain up; not ready (503, facilitator named) once the chain is stopped; /healthz stays 200", async () => {
  const stack = await createTestStack({ files: { "a.txt": "a" } });
  try {
    const health = await fetch(`${stack.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
    const ready = await fetch(`${stack.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: "ready",
      checks: {
        database: { ok: true },
        pricing: { ok: true, detail: "pricing files not loaded by this server" },
        facilitator: { ok: true },
      },
    });

    await stack.devnet.stop();
    // The facilitator answer is reused for a few seconds: wait for a fresh one.
    let body: any;
    for (;;) {
      const res = await fetch(`${stack.url}/readyz`);
      body = await res.json();
      if (res.status === 503) break;
      await Bun.sleep(250);
    }
    expect(body.status).toBe("not ready");
    expect(body.checks.database).toEqual({ ok: true });
    expect(body.checks.facilitator).toEqual({ ok: false, detail: "the facilitator (or its chain) does not answer" });
    expect(JSON.stringify(body)).not.toContain("127.0.0.1");
    expect((await fetch(`${stack.url}/healthz`)).status).toBe(200);
  } finally {
    await stack.stop();
  }
}, 120_000);

test("a remote facilitator that does not answer, and pricing not loaded yet, each make /readyz 503", async () => {
  // A port nothing listens on: bound, then closed.
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port;
  probe.stop(true);
  const settings = loadSettings({
    CIDGATE_DB: ":memory:",
    FACILITATOR_URL: `http://127.0.0.1:${port}`,
    FACILITATOR_TIMEOUT_MS: "2000",
  });
  const db = openDb(":memory:");
  const notLoaded = { status: () => ({}) } as unknown as Pricing;
  const app = new Elysia().use(
    healthModule({
      database: createStores(db, settings),
      facilitator: createFacilitator(settings),
      pricing: notLoaded,
      timeoutMs: 2000,
      cacheMs: 0,
    }),
  );
  const res = await app.handle(new Request("http://localhost/readyz"));
  expect(res.status).toBe(503);
  const body = (await res.json()) as any;
  expect(body.checks.facilitator.ok).toBe(false);
  expect(body.checks.pricing).toEqual({ ok: false, detail: "no pricing loaded yet (see GET /v3/x402/config)" });
  expect(body.checks.database).toEqual({ ok: true });
  db.sqlite.close();
});
