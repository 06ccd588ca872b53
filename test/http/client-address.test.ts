import { expect, test } from "bun:test";
import { clientAddressOf, lastForwardedFor } from "../../src/http/client-address";

test("X-Forwarded-For: the last entry (the trusted proxy's), without port or brackets", () => {
  expect(lastForwardedFor("203.0.113.7")).toBe("203.0.113.7");
  expect(lastForwardedFor("10.0.0.1, 203.0.113.7")).toBe("203.0.113.7");
  expect(lastForwardedFor("10.0.0.1,203.0.113.7:8080")).toBe("203.0.113.7");
  expect(lastForwardedFor("[2001:DB8::1]:443")).toBe("2001:db8::1");
  expect(lastForwardedFor("2001:db8::1")).toBe("2001:db8::1");
  expect(lastForwardedFor("203.0.113.7, ")).toBe("203.0.113.7");
  expect(lastForwardedFor("")).toBeUndefined();
  expect(lastForwardedFor(null)).toBeUndefined();
});

test("the header is read only with TRUST_PROXY; otherwise the connection's peer", () => {
  const server = { requestIP: () => ({ address: "127.0.0.1" }) };
  const request = new Request("http://localhost/", { headers: { "X-Forwarded-For": "203.0.113.7" } });
  expect(clientAddressOf(server, false)(request)).toBe("127.0.0.1");
  expect(clientAddressOf(server, true)(request)).toBe("203.0.113.7");
  expect(clientAddressOf(server, true)(new Request("http://localhost/"))).toBe("127.0.0.1");
  const refuses = {
    requestIP: () => {
      throw new Error("not this server's request");
    },
  };
  expect(clientAddressOf(refuses, false)(request)).toBeUndefined();
});
