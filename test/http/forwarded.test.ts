/**
 * What a trusted proxy says about the protocol, and the one warning when
 * requests come in over https while PUBLIC_URL says http.
 */
import { describe, expect, test } from "bun:test";
import { forwardedProto, publicUrlCheck } from "../../src/http/forwarded";

const req = (headers: Record<string, string>) => new Request("http://127.0.0.1:4021/x402/cid/x", { headers });

describe("forwarded protocol", () => {
  test("X-Forwarded-Proto (the first of a chain), else Forwarded: proto=, else nothing", () => {
    expect(forwardedProto(req({ "x-forwarded-proto": "HTTPS" }).headers)).toBe("https");
    expect(forwardedProto(req({ "x-forwarded-proto": "https, http" }).headers)).toBe("https");
    expect(forwardedProto(req({ forwarded: 'for=192.0.2.60;proto="https";by=203.0.113.43' }).headers)).toBe("https");
    expect(forwardedProto(req({ forwarded: "for=192.0.2.60;proto=http, for=10.0.0.1;proto=https" }).headers)).toBe(
      "http",
    );
    expect(forwardedProto(req({}).headers)).toBeUndefined();
  });

  test("behind a trusted proxy with an http PUBLIC_URL, the first https request warns once, naming the fix", () => {
    const warnings: unknown[][] = [];
    const log = { warn: (...args: unknown[]) => warnings.push(args) };
    const check = publicUrlCheck({ trustProxy: true, publicUrl: "http://shop.example", log: log as never })!;
    check(req({ "x-forwarded-proto": "http" }));
    expect(warnings).toEqual([]);
    check(req({ "x-forwarded-proto": "https" }));
    check(req({ "x-forwarded-proto": "https" }));
    expect(warnings).toHaveLength(1);
    expect(String(warnings[0][1])).toContain("set PUBLIC_URL to the https origin");
  });

  test("nothing is watched without TRUST_PROXY (anyone can send the header) or with an https PUBLIC_URL", () => {
    const log = { warn: () => {} };
    expect(publicUrlCheck({ trustProxy: false, publicUrl: "http://shop.example", log })).toBeUndefined();
    expect(publicUrlCheck({ trustProxy: true, publicUrl: "https://shop.example", log })).toBeUndefined();
  });
});
