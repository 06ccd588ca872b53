import { describe, expect, test } from "bun:test";
import { loadSettings, SettingsError } from "../src/settings";

describe("settings", () => {
  test("defaults match the documented contract", () => {
    const s = loadSettings({});
    expect(s.port).toBe(4021);
    expect(s.host).toBe("127.0.0.1");
    expect(s.publicUrl).toBe("http://127.0.0.1:4021");
    expect(s.db).toBe("data/cidgate.db");
    expect(s.dataDir).toBe("data");
    expect(s.maxTimeoutSeconds).toBe(60);
    expect(s.facilitatorUrl).toBe("https://x402.org/facilitator");
  });

  test("a bad value names the variable and what is allowed", () => {
    expect(() => loadSettings({ PORT: "http" })).toThrow(SettingsError);
    expect(() => loadSettings({ PORT: "70000" })).toThrow(/^PORT: a whole number from 0 to 65535/);
    expect(() => loadSettings({ PUBLIC_URL: "nope" })).toThrow(/^PUBLIC_URL: an http\(s\) URL/);
    expect(() => loadSettings({ USDC_ADDRESS_BASE: "0x12" })).toThrow(/^USDC_ADDRESS_BASE:/);
    expect(() => loadSettings({ FACILITATOR_NETWORKS: "solana" })).toThrow(/^FACILITATOR_NETWORKS:/);
  });

  test("a malformed private key is rejected without echoing it", () => {
    try {
      loadSettings({ RELAYER_PRIVATE_KEY: "0xdeadbeef" });
      throw new Error("accepted");
    } catch (e) {
      expect(e).toBeInstanceOf(SettingsError);
      expect((e as Error).message).not.toContain("deadbeef");
    }
  });
});
