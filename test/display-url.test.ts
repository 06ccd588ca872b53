/**
 * displayUrl (src/display-url.ts): what of a URL setting may be printed.
 * Provider RPC URLs carry their key in the path, the query or the userinfo.
 */
import { describe, expect, test } from "bun:test";
import { displayUrl } from "../src/display-url";
import { loadSettings, SettingsError } from "../src/settings";

describe("displayUrl", () => {
  test("scheme, host and port stay; path, query and userinfo become …", () => {
    expect(displayUrl("http://127.0.0.1:8545")).toBe("http://127.0.0.1:8545");
    expect(displayUrl("https://base-mainnet.g.alchemy.com/v2/abc123")).toBe("https://base-mainnet.g.alchemy.com/…");
    expect(displayUrl("https://rpc.example/?apikey=abc123")).toBe("https://rpc.example/…");
    expect(displayUrl("https://me:abc123@rpc.example:8443")).toBe("https://…@rpc.example:8443");
    expect(displayUrl("https://[::1]:8545/k#abc123")).toBe("https://[::1]:8545/…");
  });

  test("not an http(s) URL: nothing of it but the scheme", () => {
    expect(displayUrl("abc123")).toBe("…");
    expect(displayUrl("wss://rpc.example/v2/abc123")).toBe("wss:…");
  });

  test("a PostgreSQL URL keeps host, port and database; never the password", () => {
    expect(displayUrl("postgres://app:abc123@db.example:5433/shop")).toBe("postgres://…@db.example:5433/shop");
    expect(displayUrl("postgresql://db.example/shop?password=abc123")).toBe("postgresql://db.example/shop?…");
  });
});

describe("a bad URL setting's report", () => {
  test("names the variable and what it allows, never the key", () => {
    for (const [name, value] of [
      ["RPC_URL", "wss://rpc.example/v2/abc123"],
      ["RPC_URL_BASE", "rpc.example/v2/abc123"],
      ["RPC_URL_BASE_SEPOLIA", "ftp://me:abc123@rpc.example"],
      ["FACILITATOR_URL", "facilitator.example/?key=abc123"],
    ]) {
      let error: unknown;
      try {
        loadSettings({ CIDGATE_DB: ":memory:", [name]: value });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(SettingsError);
      expect((error as SettingsError).message).toContain(`${name}: an http(s) URL`);
      expect((error as SettingsError).message).not.toContain("abc123");
    }
  });
});
