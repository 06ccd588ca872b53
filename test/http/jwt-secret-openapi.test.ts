import { describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
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

  test("processes creating it at once all end with the one same secret, and no temp file is left", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cidgate-secret-race-"));
    try {
      const module = join(import.meta.dir, "../../src/http/jwt-secret.ts");
      const ROUNDS = 200;
      const CHILDREN = 4;
      // every child waits for the same instant, then creates the secret of data folders 0..ROUNDS-1 in turn:
      // each folder is raced for by all of them, so the check-then-create window is hit for real
      const start = Date.now() + 1500;
      const code = `
        const { resolveJwtSecret } = await import(${JSON.stringify(module)});
        const out = [];
        while (Date.now() < ${start}) {}
        for (let i = 0; i < ${ROUNDS}; i++) out.push(resolveJwtSecret({ jwtSecret: undefined, dataDir: ${JSON.stringify(dir)} + "/d" + i }));
        console.log(out.join(","));`;
      const children = Array.from({ length: CHILDREN }, () =>
        Bun.spawn([process.execPath, "-e", code], { stdout: "pipe", stderr: "pipe" }),
      );
      const outs = await Promise.all(
        children.map(async (c) => ({
          code: await c.exited,
          out: (await new Response(c.stdout).text()).trim(),
          err: await new Response(c.stderr).text(),
        })),
      );
      for (const o of outs) expect(o).toMatchObject({ code: 0, err: "" });
      const seen = outs.map((o) => o.out.split(","));
      for (let i = 0; i < ROUNDS; i++) {
        const dataDir = join(dir, `d${i}`);
        const secret = readFileSync(jwtSecretPath({ dataDir }), "utf8").trim();
        expect(secret).toMatch(/^[0-9a-f]{64}$/);
        expect({ i, got: seen.map((s) => s[i]) }).toEqual({ i, got: Array(CHILDREN).fill(secret) });
        expect(readdirSync(dataDir)).toEqual(["jwt-secret"]);
        expect(statSync(jwtSecretPath({ dataDir })).mode & 0o777).toBe(0o600);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
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
