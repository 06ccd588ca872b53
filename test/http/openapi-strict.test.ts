/**
 * /openapi/json as strict tools see it: swagger-parser validates it as
 * OpenAPI 3.1, Redocly's recommended rules report nothing, and openapi-typescript
 * turns it into a client whose types compile (and refuse a wrong body), while
 * the server still answers the friendly texts the published schemas no longer carry.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SwaggerParser from "@apidevtools/swagger-parser";
import { BaseResolver, createConfig, lintDocument, makeDocumentFromString } from "@redocly/openapi-core";
import openapiTS from "openapi-typescript";
import { makeHarness, PREFIX, requirement } from "../instructions/harness";

async function published() {
  const h = await makeHarness();
  const res = await h.call("GET", "/openapi/json", { token: null });
  expect(res.status).toBe(200);
  return { h, doc: res.json, text: res.text };
}

const TSC = join(import.meta.dir, "../../node_modules/.bin/tsc");

async function tsc(dir: string, file: string) {
  const child = Bun.spawn(
    [TSC, "--noEmit", "--strict", "--target", "ESNext", "--module", "ESNext", "--moduleResolution", "bundler", file],
    { cwd: dir, stdout: "pipe", stderr: "pipe" },
  );
  const [code, out] = await Promise.all([child.exited, new Response(child.stdout).text()]);
  return { code, out };
}

describe("the published OpenAPI document", () => {
  test("is valid OpenAPI 3.1 for swagger-parser, with a licence and no TypeBox `error` keyword", async () => {
    const { doc, text } = await published();
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info.license.name).toBeString();
    expect(text).not.toContain('"error":"must');
    await SwaggerParser.validate(structuredClone(doc));
  });

  test("Redocly's recommended rules report no error and no warning", async () => {
    const { text } = await published();
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintDocument({
      document: makeDocumentFromString(text, "/openapi.json"),
      // createConfig's shape moved between openapi-core versions: the styleguide config where there is one.
      config: ((config as { styleguide?: unknown }).styleguide ?? config) as Parameters<
        typeof lintDocument
      >[0]["config"],
      externalRefResolver: new BaseResolver(),
    });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });

  test("the paid route has a summary and declares that no bearer token is needed", async () => {
    const { doc } = await published();
    for (const method of ["get", "head"]) {
      const op = doc.paths["/x402/cid/{cid}"][method];
      expect(op.summary).toBeString();
      expect(op.security).toEqual([]);
      expect(op.responses["402"]).toBeDefined();
    }
  });

  test("the server still answers the friendly texts the published schemas no longer carry", async () => {
    const { h } = await published();
    const res = await h.call("POST", PREFIX, {
      body: { name: "x", payment_requirements: [requirement({ pay_to: "nope" })] },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.details).toContainEqual({
      path: "payment_requirements.0.pay_to",
      message: "must be a 0x-prefixed 20-byte hex address",
    });
  });

  test("openapi-typescript makes a client from it that compiles, and whose types refuse a wrong body", async () => {
    const { doc } = await published();
    const dir = mkdtempSync(join(tmpdir(), "cidgate-openapi-ts-"));
    try {
      writeFileSync(join(dir, "api.ts"), await openapiTS(doc));
      const body = `import type { paths } from "./api";
type Create = paths["/v3/x402/payment_instructions"]["post"]["requestBody"]["content"]["application/json"];
type Listed = paths["/v3/x402/payments"]["get"]["responses"][200]["content"]["application/json"];`;
      writeFileSync(
        join(dir, "good.ts"),
        `${body}
export const create: Create = { name: "Premium", payment_requirements: [{ network: "base-sepolia", asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", pay_to: "0x6135561038E7C676473431842e586C8248276AED", amount: "10000" }] };
export const total = (l: Listed) => l.data.payments.length;\n`,
      );
      writeFileSync(join(dir, "bad.ts"), `${body}\nexport const create: Create = { name: 42 };\n`);
      const good = await tsc(dir, "good.ts");
      expect(good).toEqual({ code: 0, out: "" });
      const bad = await tsc(dir, "bad.ts");
      expect(bad.code).not.toBe(0);
      expect(bad.out).toContain("bad.ts");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000); // two tsc runs on a shared machine
});
