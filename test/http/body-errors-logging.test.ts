import { describe, expect, test } from "bun:test";
import { MAX_BODY_BYTES } from "../../src/http/body";
import { makeHarness, PREFIX, requirement } from "../instructions/harness";

const validBody = () => ({ name: "Premium", payment_requirements: [requirement()] });

describe("request bodies through app.handle", () => {
  test("over 1 MiB is a 413 (declared length), nothing stored", async () => {
    const h = await makeHarness();
    const body = JSON.stringify({ ...validBody(), description: "d".repeat(MAX_BODY_BYTES) });
    const res = await h.call("POST", PREFIX, { body });
    expect(res.status).toBe(413);
    expect(res.json.error.code).toBe("payload_too_large");
    expect(h.snapshot()).toBe(JSON.stringify({ instructions: [], cids: [] }));
  });

  test("over 1 MiB without Content-Length (chunked stream) is a 413 too", async () => {
    const h = await makeHarness();
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        // would go on forever: the server must stop reading at the limit
        sent += chunk.byteLength;
        c.enqueue(chunk);
      },
    });
    const res = await h.app.handle(
      new Request(`http://localhost${PREFIX}`, {
        method: "POST",
        headers: { authorization: `Bearer ${h.tokens.rw}`, "content-type": "application/json" },
        body: stream,
      }),
    );
    expect(res.status).toBe(413);
    expect(sent).toBeLessThan(MAX_BODY_BYTES + 4 * chunk.byteLength);
  });

  test("a body of just under 1 MiB is still accepted", async () => {
    const h = await makeHarness();
    const padding = MAX_BODY_BYTES - JSON.stringify({ ...validBody(), pad: "" }).length;
    const res = await h.call("POST", PREFIX, { body: JSON.stringify({ ...validBody(), pad: "p".repeat(padding) }) });
    expect(res.status).toBe(200);
  });

  test("a non-JSON body is a 415, nothing stored", async () => {
    const h = await makeHarness();
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const res = await h.call("POST", PREFIX, {
        body: JSON.stringify(validBody()),
        headers: { "content-type": type },
      });
      expect(res.status).toBe(415);
      expect(res.json.error.code).toBe("unsupported_media_type");
    }
    const none = await h.app.handle(
      new Request(`http://localhost${PREFIX}`, {
        method: "POST",
        headers: { authorization: `Bearer ${h.tokens.rw}` },
        body: new Blob([JSON.stringify(validBody())]), // no type at all
      }),
    );
    expect(none.status).toBe(415);
    expect(h.snapshot()).toBe(JSON.stringify({ instructions: [], cids: [] }));
  });

  test("JSON with a charset parameter is fine; broken JSON is a 400 invalid_json", async () => {
    const h = await makeHarness();
    const ok = await h.call("POST", PREFIX, {
      body: validBody(),
      headers: { "content-type": "application/json; charset=utf-8" },
    });
    expect(ok.status).toBe(200);
    const bad = await h.call("POST", PREFIX, { body: '{"name": "x",' });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe("invalid_json");
  });

  test("PUT with Content-Type: application/json and no body (as the pinata SDK sends) is fine", async () => {
    const h = await makeHarness();
    const pi = await h.create();
    const res = await h.call(
      "PUT",
      `${PREFIX}/${pi.id}/cids/bafkreih5aznjvttude6c3wbvqeebb6rlx5wkbzyppv7garjiubll2ceym4`,
      {
        headers: { "content-type": "application/json" },
      },
    );
    expect(res.status).toBe(200);
  });
});

describe("error shape", () => {
  test("unknown routes and methods answer JSON in the one shape, never HTML", async () => {
    const h = await makeHarness();
    for (const [method, path] of [
      ["GET", "/nope"],
      ["GET", "/v3/x402/nothing"],
      ["POST", `${PREFIX}/x/y/z`],
    ]) {
      const res = await h.call(method, path);
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toContain("application/json");
      expect(Object.keys(res.json)).toEqual(["error"]);
      expect(res.json.error).toMatchObject({ code: "not_found", message: expect.any(String) });
    }
  });

  test("a database failure is a 500 with no internals", async () => {
    const h = await makeHarness();
    h.db.sqlite.exec("DROP TABLE cid_mappings");
    const realError = console.error;
    const printed: string[] = [];
    console.error = (...a: unknown[]) => void printed.push(a.join(" "));
    try {
      const res = await h.call("GET", `${PREFIX}?cid=bafkreih5aznjvttude6c3wbvqeebb6rlx5wkbzyppv7garjiubll2ceym4`);
      expect(res.status).toBe(500);
      expect(res.json).toEqual({ error: { code: "internal_error", message: "internal error" } });
      expect(res.text).not.toContain("cid_mappings");
      // exactly one log line, naming the error and its message (the missing table), with no stack trace
      expect(printed).toHaveLength(1);
      expect(printed[0]).toMatch(/^unhandled error: \w*Error: .*no such table: cid_mappings/);
      expect(printed[0]).not.toMatch(/\n\s+at /);
    } finally {
      console.error = realError;
    }
  });
});

describe("request log", () => {
  test("one line per request with method, path, real status, duration and request id; no token, no query", async () => {
    const h = await makeHarness();
    await h.call("GET", "/nope");
    await h.call("GET", `${PREFIX}?name=secret-filter`);
    await h.call("POST", PREFIX, { token: null, body: validBody() });
    await h.call("GET", PREFIX, { headers: { "x-request-id": "req-42" } });
    await Bun.sleep(10); // afterResponse runs after the response is handed back
    const lines = h.logLines;
    expect(lines).toHaveLength(4);
    expect(lines.map((l) => l.status)).toEqual([404, 200, 401, 200]);
    for (const l of lines) {
      // (typeof checks: toMatchObject with expect.any() rewrites the object under test in bun 1.4)
      expect([typeof l.method, typeof l.path, typeof l.ms, typeof l.requestId]).toEqual([
        "string",
        "string",
        "number",
        "string",
      ]);
    }
    expect(lines.map((l) => `${l.method} ${l.path}`)).toEqual([
      "GET /nope",
      `GET ${PREFIX}`,
      `POST ${PREFIX}`,
      `GET ${PREFIX}`,
    ]);
    expect(lines[3].requestId).toBe("req-42");
    const all = JSON.stringify(lines);
    expect(all).not.toContain(h.tokens.rw);
    expect(all).not.toContain("secret-filter");
  });

  test("answers carry the request id", async () => {
    const h = await makeHarness();
    const res = await h.call("GET", PREFIX, { headers: { "x-request-id": "abc" } });
    expect(res.headers.get("x-request-id")).toBe("abc");
    expect((await h.call("GET", "/nope")).headers.get("x-request-id")).toBeTruthy();
    const odd = await h.call("GET", PREFIX, { headers: { "x-request-id": 'a b"c' } });
    expect(odd.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});
