/**
 * A failed database query never puts its parameters in the log: drizzle's
 * error on PostgreSQL reads "Failed query: <SQL> params: <values>", and the
 * values may be a webhook's secret or a payer's proof. It is logged by its
 * cause (the driver's error) instead: through logFailure (the request log's
 * backstop, the watchers) at every level, and by the errors plugin's 500.
 *
 * The failure is real: a duplicate webhook id inserted through drizzle on the
 * test PostgreSQL (bun:sqlite's drizzle session does not wrap its errors).
 */
import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { Elysia } from "elysia";
import { openPg, type Pg } from "../../src/db/pg";
import { webhooks } from "../../src/db/schema-pg";
import { errors } from "../../src/http/errors";
import { logFailure } from "../../src/http/log-paths";
import { createLogger } from "../../src/http/logging";
import { createTestDatabase, pgAvailable } from "../support/postgres";

const SECRET = "whsec_do-not-log-me-0123456789abcdef";
const available = await pgAvailable("failed queries in the log");

describe.skipIf(!available)("a failed query's parameters", () => {
  let pg: Pg;
  const row = () => ({
    id: "wh_0190a000-0000-7000-8000-000000000001",
    url: "https://receiver.example/hook",
    secret: SECRET,
    events: [],
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
  });
  /** The same webhook inserted a second time: the database refuses the duplicate id. */
  const failingInsert = () => pg.q().insert(webhooks).values(row());

  beforeAll(async () => {
    pg = await openPg(await createTestDatabase());
    await failingInsert();
  }, 60_000); // the first test database starts the server
  afterAll(() => pg?.close());

  async function failedQuery(): Promise<Error> {
    const error = await failingInsert().then(
      () => undefined,
      (e: Error) => e,
    );
    // What the log must not show is really in the error: the test could fail.
    expect(error?.message).toStartWith("Failed query:");
    expect(error?.message).toContain(SECRET);
    return error!;
  }

  test("logFailure logs it by its cause, without the secret or the parameters, at every level", async () => {
    const error = await failedQuery();
    const written: string[] = [];
    const log = createLogger("debug", { write: (t: string) => written.push(t) });
    logFailure(log, "error", { requestId: "r1" }, "unhandled error", error);

    const lines = written
      .join("")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { level: number; err: string });
    expect(lines.map((l) => l.level)).toEqual([50, 20]); // the error line, and the debug one with paths
    for (const line of lines) {
      expect(line.err).toContain("database query failed");
      expect(line.err).toContain("duplicate key value violates unique constraint"); // the driver's own words
    }
    const text = written.join("");
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain("params");
    expect(text).not.toContain("insert into");
  });

  test("a route whose query fails answers 500 internal_error, and the line logged holds no secret", async () => {
    const app = new Elysia().use(errors).post("/webhooks", async () => {
      await failingInsert();
      return "made";
    });
    const logged: string[] = [];
    const consoleError = spyOn(console, "error").mockImplementation((...args: unknown[]) => {
      logged.push(args.map(String).join(" "));
    });
    let response: Response;
    try {
      response = await app.handle(new Request("http://localhost/webhooks", { method: "POST" }));
    } finally {
      consoleError.mockRestore();
    }

    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: { code: "internal_error", message: "internal error" } });
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain("database query failed");
    expect(logged[0]).not.toContain(SECRET);
    expect(logged[0]).not.toContain("params");
  });
});
