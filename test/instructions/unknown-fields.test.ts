/**
 * One rule set (issue 10, item 9): the management API refuses a requirement
 * field nobody declared, exactly as a pricing file does, instead of dropping it.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { closeEngineStores, enginesHere } from "./engines";
import { makeHarness, PREFIX, requirement } from "./harness";

const engines = await enginesHere("unknown requirement fields");
afterEach(closeEngineStores);

describe.each(engines)("%s", (engine) => {
  test("POST refuses `extra` in a requirement with a clear error and stores nothing", async () => {
    const h = await makeHarness({}, engine);
    const res = await h.call("POST", PREFIX, {
      body: { name: "x", payment_requirements: [requirement({ extra: 1 })] },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("invalid_request");
    expect(JSON.stringify(res.json)).toContain("payment_requirements.0.extra");
    expect(JSON.stringify(res.json)).toContain("unknown field");
    expect(JSON.parse(await h.snapshot()).instructions).toHaveLength(0);
  });

  test("PATCH refuses `extra` in a requirement and leaves the instruction as it was", async () => {
    const h = await makeHarness({}, engine);
    const pi = await h.create({ payment_requirements: [requirement()] });
    const res = await h.call("PATCH", `${PREFIX}/${pi.id}`, {
      body: { payment_requirements: [requirement({ amount: "20000", extra: 1 })] },
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.json)).toContain("payment_requirements.0.extra");
    const got = await h.call("GET", `${PREFIX}/${pi.id}`);
    expect(got.json.data.version).toBe(1);
    expect(got.json.data.payment_requirements[0].amount).toBe("10000");
  });

  test("a known field spelled in a requirement still works (nothing else is refused)", async () => {
    const h = await makeHarness({}, engine);
    const pi = await h.create({ payment_requirements: [requirement({ description: "fee" })] });
    expect((pi.payment_requirements as { description: string }[])[0].description).toBe("fee");
  });
});
