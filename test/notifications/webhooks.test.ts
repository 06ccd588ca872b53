/**
 * Webhooks through the production server (src/server.ts) and a real receiver
 * on 127.0.0.1: the signature a receiver checks, the events of grants and
 * revokes, the API's management and delivery log, the pricing file's
 * `notifications:` section, and delivery of what was queued across a restart.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getAddress } from "viem";
import { openDb } from "../../src/db/client";
import { createToken } from "../../src/http/auth";
import { createLogger } from "../../src/http/logging";
import { verifySignature } from "../../src/notifications/signature";
import { startServer } from "../../src/server";
import { loadSettings } from "../../src/settings";
import { createStores } from "../../src/stores";
import { type Receiver, startReceiver } from "./support";

const SECRET = "webhook-test-jwt-secret-0123456789abcdef";
const PAYER = getAddress("0x5555555555555555555555555555555555555abc");
const CID = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), "cidgate-webhooks-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function serve(dir: string, opts: { pricing?: boolean; schedule?: number[] } = {}) {
  const settings = loadSettings({
    CIDGATE_DB: join(dir, "cidgate.db"),
    HOST: "127.0.0.1",
    PORT: "0",
    CIDGATE_CONFIG_DIR: join(dir, "config"),
    CIDGATE_CONTENT_DIR: join(dir, "content"),
  });
  mkdirSync(settings.contentDir, { recursive: true });
  const running = await startServer({
    settings,
    log: createLogger("silent"),
    jwtSecret: SECRET,
    pricing: opts.pricing ?? false,
    webhooks: { scheduleMs: opts.schedule ?? [60_000], pollMs: 50 },
  });
  const write = await createToken(SECRET, { scopes: ["read", "write"], ttlSeconds: 600 });
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(running.url + path, {
      method,
      headers: { authorization: `Bearer ${write}`, ...(body !== undefined && { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as any };
  };
  return { running, api, settings };
}

function receiver(): Receiver {
  const r = startReceiver();
  cleanups.push(() => r.stop());
  return r;
}

/** An instruction with CID attached, made through the API (entitlements need one). */
async function instruction(api: Awaited<ReturnType<typeof serve>>["api"]) {
  const made = await api("POST", "/v3/x402/payment_instructions", {
    name: "Fee",
    payment_requirements: [
      {
        network: "base-sepolia",
        asset: "0x036cbd53842c5426634e7929541ec2318f3dcf7e",
        pay_to: "0x1111111111111111111111111111111111111111",
        amount: "10000",
      },
    ],
  });
  expect(made.status).toBe(200);
  expect((await api("PUT", `/v3/x402/payment_instructions/${made.json.data.id}/cids/${CID}`)).status).toBe(200);
  return made.json.data.id as string;
}

describe("webhook signature", () => {
  test("the test endpoint POSTs a body whose Cidgate-Signature the receiver checks with the secret it was given", async () => {
    const hook = receiver();
    const { running, api } = await serve(tempDir());
    cleanups.push(() => running.stop(true));
    const made = await api("POST", "/v3/x402/webhooks", { url: hook.url, description: "ops" });
    expect(made.status).toBe(201);
    const secret: string = made.json.data.secret;
    expect(secret).toMatch(/^whsec_/);
    // The secret is shown once: never in a list.
    const listed = await api("GET", "/v3/x402/webhooks");
    expect(JSON.stringify(listed.json)).not.toContain(secret);

    const sent = await api("POST", `/v3/x402/webhooks/${made.json.data.id}/test`);
    expect(sent.status).toBe(200);
    expect(sent.json.data).toMatchObject({
      state: "delivered",
      attempts: 1,
      last_status: 200,
      event_type: "webhook.test",
    });
    expect(hook.received).toHaveLength(1);
    const { body, headers } = hook.received[0];

    // The documented check, done by hand as a receiver in another language would.
    const header = headers.get("cidgate-signature")!;
    const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
    expect(m).not.toBeNull();
    const expected = createHmac("sha256", secret).update(`${m![1]}.${body}`).digest("hex");
    expect(m![2]).toBe(expected);
    expect(Math.abs(Number(m![1]) - Date.now() / 1000)).toBeLessThan(300);
    // And the helper a JS receiver can copy refuses what it should.
    expect(verifySignature(secret, body, header)).toBe(true);
    expect(verifySignature("whsec_another-secret-entirely", body, header)).toBe(false);
    expect(verifySignature(secret, body.replace("test", "tesT"), header)).toBe(false);
    expect(verifySignature(secret, body, header, { now: Number(m![1]) + 301 })).toBe(false);

    const event = JSON.parse(body);
    expect(event).toMatchObject({ type: "webhook.test", data: { webhook_id: made.json.data.id } });
    expect(headers.get("cidgate-event-id")).toBe(event.id);
    expect(headers.get("content-type")).toBe("application/json");
  });
});

describe("entitlement events", () => {
  test("a grant and a revoke each send one event, with the entitlement, to the webhooks that want them", async () => {
    const all = receiver();
    const revokesOnly = receiver();
    const { running, api } = await serve(tempDir());
    cleanups.push(() => running.stop(true));
    await api("POST", "/v3/x402/webhooks", { url: all.url });
    await api("POST", "/v3/x402/webhooks", { url: revokesOnly.url, events: ["entitlement.revoked"] });
    const pi = await instruction(api);

    const granted = await api("POST", "/v3/x402/entitlements", { payer: PAYER, payment_instruction_id: pi, cid: CID });
    expect(granted.status).toBe(201);
    const id = granted.json.data.id;
    expect((await api("DELETE", `/v3/x402/entitlements/${id}`)).status).toBe(200);
    expect((await api("DELETE", `/v3/x402/entitlements/${id}`)).status).toBe(200); // a second revoke: no event
    await all.until(2);
    await revokesOnly.until(1);
    await running.dispatcher.idle();

    expect(all.events().map((e) => e.type)).toEqual(["entitlement.granted", "entitlement.revoked"]);
    expect(all.events()[0].data).toMatchObject({ entitlement_id: id, payer: PAYER, cid: CID, source: "grant" });
    expect(all.events()[1].data.revoked_at).toBe(granted.json.data.revoked_at ?? all.events()[1].data.revoked_at);
    expect(revokesOnly.events().map((e) => e.type)).toEqual(["entitlement.revoked"]);

    const log = await api("GET", "/v3/x402/webhooks/deliveries?state=delivered");
    expect(log.status).toBe(200);
    expect(log.json.data.deliveries.map((d: { event_type: string }) => d.event_type).sort()).toEqual([
      "entitlement.granted",
      "entitlement.revoked",
      "entitlement.revoked",
    ]);
  });
});

describe("delivery across a restart", () => {
  test("an event queued while the receiver is down is sent once both are back, with the same event id", async () => {
    const dir = tempDir();
    const hook = receiver();
    hook.answer(503);
    // Retried a second later: cidgate is stopped before that, and the row waits in the database.
    const first = await serve(dir, { schedule: [1000, 1000] });
    const made = await first.api("POST", "/v3/x402/webhooks", { url: hook.url });
    const pi = await instruction(first.api);
    await first.api("POST", "/v3/x402/entitlements", { payer: PAYER, payment_instruction_id: pi });
    await first.running.dispatcher.idle();
    const failed = await first.api("GET", `/v3/x402/webhooks/deliveries?webhook_id=${made.json.data.id}`);
    expect(failed.json.data.deliveries).toHaveLength(1);
    expect(failed.json.data.deliveries[0]).toMatchObject({ state: "pending", attempts: 1, last_status: 503 });
    expect(failed.json.data.deliveries[0].last_error).toBe("receiver answered 503");
    await first.running.stop();

    // While cidgate is down, a CLI grant on the same database queues another event.
    const db = openDb(join(dir, "cidgate.db"));
    createStores(db, { contentDir: join(dir, "content") }).entitlements.grant(
      { payer: PAYER, instructionId: pi, cid: CID },
      Math.floor(Date.now() / 1000),
    );
    db.sqlite.close();
    expect(hook.received).toHaveLength(0);

    hook.answer(200);
    const second = await serve(dir, { schedule: [1000] });
    cleanups.push(() => second.running.stop(true));
    await hook.until(2);
    await second.running.dispatcher.idle();
    expect(hook.events().map((e) => e.type)).toEqual(["entitlement.granted", "entitlement.granted"]);
    // The CLI's event was due at once; the first one at its retry time. Each arrived once.
    expect(hook.events().map((e) => e.id)).toContain(JSON.parse(failed.json.data.deliveries[0].payload).id);
    expect(new Set(hook.events().map((e) => e.id)).size).toBe(2);
    const log = await second.api("GET", "/v3/x402/webhooks/deliveries");
    expect(log.json.data.deliveries.map((d: { state: string }) => d.state)).toEqual(["delivered", "delivered"]);
    expect(hook.received).toHaveLength(2); // each once
  });
});

describe("notifications: in a pricing file", () => {
  test("declares webhooks (secret from the environment); a broken reload sends config.reload_failed with file:line:col", async () => {
    const dir = tempDir();
    const hook = receiver();
    process.env.CIDGATE_TEST_WEBHOOK_SECRET = "from-the-environment-0123456789";
    cleanups.push(() => delete process.env.CIDGATE_TEST_WEBHOOK_SECRET);
    mkdirSync(join(dir, "config"), { recursive: true });
    const file = join(dir, "config", "shop.yaml");
    const good = `notifications:
  webhooks:
    ops:
      url: ${hook.url}
      secret: \${CIDGATE_TEST_WEBHOOK_SECRET}
      events: [config.reload_failed, payment.settled]
`;
    writeFileSync(file, good);
    const { running, api } = await serve(dir, { pricing: true });
    cleanups.push(() => running.stop(true));

    const listed = await api("GET", "/v3/x402/webhooks");
    expect(listed.json.data.webhooks).toHaveLength(1);
    const declared = listed.json.data.webhooks[0];
    expect(declared).toMatchObject({
      url: hook.url,
      source: "file:shop.yaml#ops",
      events: ["config.reload_failed", "payment.settled"],
    });
    // Changed only by editing the file.
    expect((await api("DELETE", `/v3/x402/webhooks/${declared.id}`)).status).toBe(409);

    writeFileSync(file, `${good}      colour: blue\n`);
    const reload = await api("POST", "/v3/x402/config/reload");
    expect(reload.status).toBe(422);
    await hook.until(1);
    const [event] = hook.events();
    expect(event.type).toBe("config.reload_failed");
    expect(event.data.errors).toEqual([
      {
        file: "shop.yaml",
        line: 7,
        column: 7,
        rule: "unknown-field",
        message: 'notifications.webhooks.ops.colour: unknown field "colour"',
      },
    ]);
    expect(
      verifySignature(
        "from-the-environment-0123456789",
        hook.received[0].body,
        hook.received[0].headers.get("cidgate-signature"),
      ),
    ).toBe(true);

    // The same mistake again is not said twice; the webhook (and its id) survive a good edit.
    await api("POST", "/v3/x402/config/reload");
    writeFileSync(file, good.replace("events: [config.reload_failed, payment.settled]", "events: [payment.settled]"));
    expect((await api("POST", "/v3/x402/config/reload")).status).toBe(200);
    const after = await api("GET", "/v3/x402/webhooks");
    expect(after.json.data.webhooks).toEqual([
      expect.objectContaining({ id: declared.id, events: ["payment.settled"] }),
    ]);
    await running.dispatcher.idle();
    expect(hook.received).toHaveLength(1);
  });

  test("a bad url or a short secret is a pricing error where it is written; nothing applied", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "config"), { recursive: true });
    writeFileSync(
      join(dir, "config", "a.yaml"),
      "notifications:\n  webhooks:\n    x:\n      url: ftp://example.com\n      secret: short\n",
    );
    const { running, api } = await serve(dir, { pricing: true });
    cleanups.push(() => running.stop(true));
    const config = await api("GET", "/v3/x402/config");
    expect(config.json.data.last_reload.result).toBe("rejected");
    expect(
      config.json.data.last_reload.errors.map((e: { line: number; column: number; rule: string }) => [
        e.line,
        e.column,
        e.rule,
      ]),
    ).toEqual([
      [4, 12, "url"],
      [5, 15, "secret"],
    ]);
    expect((await api("GET", "/v3/x402/webhooks")).json.data.webhooks).toEqual([]);
  });
});

describe("webhook API refusals", () => {
  test("bad bodies are 400 in the error shape, unknown ids 404, a read token cannot write", async () => {
    const { running, api } = await serve(tempDir());
    cleanups.push(() => running.stop(true));
    const bad = await api("POST", "/v3/x402/webhooks", { url: "not a url", events: ["payment.nope"], extra: 1 });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe("invalid_request");
    const spaced = await api("POST", "/v3/x402/webhooks", { url: "http://exa mple.com/hook" });
    expect(spaced.status).toBe(400);
    expect(spaced.json.error.details).toEqual([{ path: "url", message: "must be an http(s) URL" }]);
    expect((await api("POST", "/v3/x402/webhooks/wh_nope/test")).status).toBe(404);
    expect((await api("POST", "/v3/x402/webhooks/deliveries/999/retry")).status).toBe(404);
    expect((await api("GET", "/v3/x402/webhooks")).json.data.webhooks).toEqual([]);
    const read = await createToken(SECRET, { scopes: ["read"], ttlSeconds: 600 });
    const res = await fetch(`${running.url}/v3/x402/webhooks`, {
      method: "POST",
      headers: { authorization: `Bearer ${read}`, "content-type": "application/json" },
      body: JSON.stringify({ url: "http://127.0.0.1:1/x" }),
    });
    expect(res.status).toBe(403);
  });
});
