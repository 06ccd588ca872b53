import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jwtSecretPath, resolveJwtSecret } from "../../src/http/jwt-secret";
import { makeHarness } from "../instructions/harness";

describe("JWT secret", () => {
  test("generated once into the data folder with mode 0600, then reused", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "cidgate-secret-"));
    try {
      const first = resolveJwtSecret({ jwtSecret: undefined, dataDir: join(dataDir, "nested") });
      expect(first.length).toBeGreaterThanOrEqual(32);
      const path = jwtSecretPath({ dataDir: join(dataDir, "nested") });
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(resolveJwtSecret({ jwtSecret: undefined, dataDir: join(dataDir, "nested") })).toBe(first);
      // another data folder, another secret
      expect(resolveJwtSecret({ jwtSecret: undefined, dataDir })).not.toBe(first);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test("JWT_SECRET wins and nothing is written", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "cidgate-secret-"));
    try {
      expect(resolveJwtSecret({ jwtSecret: "s".repeat(40), dataDir })).toBe("s".repeat(40));
      expect(() => statSync(jwtSecretPath({ dataDir }))).toThrow();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test("a loosened file is tightened back to 0600; a too-short one is refused", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "cidgate-secret-"));
    try {
      const path = jwtSecretPath({ dataDir });
      writeFileSync(path, "k".repeat(64));
      chmodSync(path, 0o644);
      expect(resolveJwtSecret({ jwtSecret: undefined, dataDir })).toBe("k".repeat(64));
      expect(statSync(path).mode & 0o777).toBe(0o600);
      writeFileSync(path, "short");
      expect(() => resolveJwtSecret({ jwtSecret: undefined, dataDir })).toThrow(/at least 32/);
      expect(readFileSync(path, "utf8")).toBe("short"); // never silently replaced: tokens would all break
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("OpenAPI", () => {
  test("/openapi/json documents every management route from the TypeBox models, with the bearer scheme", async () => {
    const h = await makeHarness();
    const res = await h.call("GET", "/openapi/json", { token: null });
    expect(res.status).toBe(200);
    const doc = res.json;
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    const p = "/v3/x402/payment_instructions";
    const ops = {
      [p]: ["get", "post"],
      [`${p}/{id}`]: ["get", "patch", "delete"],
      [`${p}/{id}/cids`]: ["get"],
      [`${p}/{id}/cids/{cid}`]: ["put", "delete"],
    };
    for (const [path, methods] of Object.entries(ops)) {
      for (const m of methods) {
        const op = doc.paths[path]?.[m];
        expect(op).toBeDefined();
        expect(op.security).toEqual([{ bearer: [] }]);
      }
    }
    // the request body of create is the model that validates it
    const create = doc.paths[p].post.requestBody.content["application/json"].schema;
    expect(create.required).toEqual(expect.arrayContaining(["name", "payment_requirements"]));
    expect(create.properties.payment_requirements.items.properties).toHaveProperty("pay_to");
    expect(doc.paths[p].get.parameters.map((x: { name: string }) => x.name)).toEqual(
      expect.arrayContaining(["limit", "pageToken", "cid", "name", "id"]),
    );
  });

  test("/openapi is a self-contained page: no external script or stylesheet", async () => {
    const h = await makeHarness();
    const res = await h.call("GET", "/openapi", { token: null });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(res.text).not.toMatch(/<script[^>]+src=/i);
    expect(res.text).not.toMatch(/<link[^>]+href=/i);
    expect(res.text).not.toMatch(/https?:\/\//);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
  });
});
