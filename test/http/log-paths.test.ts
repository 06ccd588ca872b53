import { expect, test } from "bun:test";
import { logFailure, withoutPaths } from "../../src/http/log-paths";
import { createLogger } from "../../src/http/logging";

test("absolute paths are cut out of a logged message, relative names stay", () => {
  expect(withoutPaths("ENOENT: no such file or directory, open '/srv/cidgate/content/a.txt'")).toBe(
    "ENOENT: no such file or directory, open '<path>'",
  );
  expect(withoutPaths("EACCES: permission denied, scandir C:\\data\\content")).toBe(
    "EACCES: permission denied, scandir <path>",
  );
  expect(withoutPaths("content path \"docs/a.md\" must not contain '..'")).toBe(
    "content path \"docs/a.md\" must not contain '..'",
  );
  expect(withoutPaths("fetch https://x402.org/facilitator failed")).toBe("fetch https://x402.org/facilitator failed");
});

test("logFailure: the path only in the debug line", () => {
  const lines: { level: number; err: string }[] = [];
  const sink = {
    write: (t: string) =>
      lines.push(
        ...t
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l)),
      ),
  };
  const error = new Error("ENOENT: no such file or directory, open '/srv/content/a.txt'");
  logFailure(createLogger("info", sink), "warn", {}, "content file unreadable", error);
  expect(lines).toHaveLength(1);
  expect(lines[0].err).not.toContain("/srv");
  logFailure(createLogger("debug", sink), "warn", {}, "content file unreadable", error);
  expect(lines).toHaveLength(3);
  expect(lines[2].level).toBe(20);
  expect(lines[2].err).toContain("/srv/content/a.txt");
});
