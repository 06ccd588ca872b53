/**
 * The checks' decision on plain facts (src/doctor/checks.ts): the rules that
 * start-up refuses on and `cidgate doctor` reports, one fact at a time. The
 * probes that gather these facts run against a real chain in
 * test/cli/shop.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { type CheckResult, decide, LOW_GAS_WEI, type Probed, type ShopFacts } from "../../src/doctor/checks";
import { rpcFacts } from "../../src/doctor/probe";
import { loadSettings } from "../../src/settings";

function facts(env: Record<string, string> = {}, over: Partial<ShopFacts> = {}): ShopFacts {
  return {
    settings: loadSettings({ CIDGATE_DB: ":memory:", ...env }),
    publicUrlGiven: env.PUBLIC_URL !== undefined,
    pricedNetworks: ["base-sepolia"],
    supported: { value: [{ scheme: "exact", network: "base-sepolia" }] },
    usdc: [],
    files: [],
    rpcs: [],
    served: {},
    ...over,
  };
}

/** Facts whose RPCs answer `chainIds` (by URL), each network's RPC chosen as the ledger chooses it. */
async function withRpcs(
  env: Record<string, string>,
  chainIds: Record<string, Probed<number>>,
  over: Partial<ShopFacts> = {},
): Promise<ShopFacts> {
  const base = facts(env, over);
  const asked = await rpcFacts(base.settings, base.pricedNetworks, async (url) => chainIds[url]);
  return { ...base, ...asked };
}

const LOCAL = {
  FACILITATOR_URL: "local",
  RPC_URL: "http://127.0.0.1:8545",
  RELAYER_PRIVATE_KEY: `0x${"11".repeat(32)}`,
};

function named(results: CheckResult[], name: string): CheckResult {
  const r = results.find((c) => c.name === name);
  if (!r) throw new Error(`no check ${name} in ${JSON.stringify(results)}`);
  return r;
}

describe("public URL", () => {
  test("loopback without PUBLIC_URL is fine", () => {
    expect(named(decide(facts()), "public URL").status).toBe("ok");
  });

  test("HOST=0.0.0.0 without PUBLIC_URL fails, naming both and the fix", () => {
    const r = named(decide(facts({ HOST: "0.0.0.0" })), "public URL");
    expect(r.status).toBe("fail");
    expect(r.message).toContain("0.0.0.0");
    expect(r.message).toContain("set PUBLIC_URL");
  });

  test("a public HOST without PUBLIC_URL fails; with it, passes", () => {
    expect(named(decide(facts({ HOST: "203.0.113.7" })), "public URL").status).toBe("fail");
    const ok = decide(facts({ HOST: "0.0.0.0", PUBLIC_URL: "https://shop.example.com" }));
    expect(named(ok, "public URL")).toEqual({ name: "public URL", status: "ok", message: "https://shop.example.com" });
  });

  test("PUBLIC_URL naming 0.0.0.0, or localhost with a public HOST, fails", () => {
    expect(named(decide(facts({ PUBLIC_URL: "http://0.0.0.0:4021" })), "public URL").status).toBe("fail");
    const local = decide(facts({ HOST: "0.0.0.0", PUBLIC_URL: "http://localhost:4021" }));
    expect(named(local, "public URL").status).toBe("fail");
  });

  test("plain http on a public name fails once mainnet is priced, not before", () => {
    const env = { HOST: "0.0.0.0", PUBLIC_URL: "http://shop.example.com" };
    expect(named(decide(facts(env)), "public URL").status).toBe("ok");
    const mainnet = {
      pricedNetworks: ["base"],
      supported: { value: [{ scheme: "exact", network: "base" }] },
    };
    const r = named(decide(facts(env, mainnet)), "public URL");
    expect(r.status).toBe("fail");
    expect(r.message).toContain("https");
  });
});

describe("facilitator", () => {
  test("a priced network the facilitator does not settle fails, naming it and what it does settle", () => {
    const r = named(decide(facts({}, { pricedNetworks: ["base", "base-sepolia"] })), "facilitator");
    expect(r.status).toBe("fail");
    expect(r.message).toContain("does not settle base,");
    expect(r.message).toContain("it settles base-sepolia");
  });

  test("CAIP-2 names in /supported count for the v1 name priced", () => {
    const supported = { value: [{ scheme: "exact", network: "eip155:8453" }] };
    expect(named(decide(facts({}, { pricedNetworks: ["base"], supported })), "facilitator").status).toBe("ok");
  });

  test("only the exact scheme counts", () => {
    const supported = { value: [{ scheme: "upto", network: "base-sepolia" }] };
    expect(named(decide(facts({}, { supported })), "facilitator").status).toBe("fail");
  });

  test("unreachable: a failure when something is priced, a warning when nothing is", () => {
    const down = { supported: { error: "unreachable (ECONNREFUSED)" } };
    const priced = named(decide(facts({}, down)), "facilitator");
    expect(priced.status).toBe("fail");
    expect(priced.message).toContain("base-sepolia cannot be settled");
    expect(named(decide(facts({}, { ...down, pricedNetworks: [] })), "facilitator").status).toBe("warn");
  });

  test("the built-in one's fix is FACILITATOR_NETWORKS", () => {
    const r = named(decide(facts(LOCAL, { pricedNetworks: ["base"] })), "facilitator");
    expect(r.message).toContain("FACILITATOR_NETWORKS");
  });
});

describe("RPC", () => {
  const RPC = LOCAL.RPC_URL;
  test("chain id of the priced network passes; another chain fails naming both ids", async () => {
    expect(named(decide(await withRpcs(LOCAL, { [RPC]: { value: 84532 } })), "RPC").status).toBe("ok");
    const r = named(decide(await withRpcs(LOCAL, { [RPC]: { value: 8453 } })), "RPC");
    expect(r.status).toBe("fail");
    expect(r.message).toContain("chain 8453 (base)");
    expect(r.message).toContain("base-sepolia is chain 84532");
    // With a remote facilitator the RPC only confirms lost answers: a warning, naming the variable to set.
    const remote = decide(await withRpcs({ RPC_URL: RPC }, { [RPC]: { value: 8453 } }));
    expect(named(remote, "RPC base-sepolia").status).toBe("warn");
    expect(named(remote, "RPC base-sepolia").message).toContain("set RPC_URL_BASE_SEPOLIA");
  });

  test("the built-in facilitator: the RPC's chain must be one of FACILITATOR_NETWORKS, priced or not", async () => {
    const r = named(decide(await withRpcs(LOCAL, { [RPC]: { value: 8453 } }, { pricedNetworks: [] })), "RPC");
    expect(r.status).toBe("fail");
    expect(r.message).toContain("FACILITATOR_NETWORKS is base-sepolia");
    const both = { ...LOCAL, FACILITATOR_NETWORKS: "base,base-sepolia" };
    const mainnet = await withRpcs(both, { [RPC]: { value: 8453 } }, { pricedNetworks: ["base"] });
    expect(named(decide(mainnet), "RPC").status).toBe("ok");
  });

  test("unanswered: a failure for the built-in facilitator, a warning for a remote one", async () => {
    expect(named(decide(await withRpcs(LOCAL, { [RPC]: { error: "timeout" } })), "RPC").status).toBe("fail");
    const remote = await withRpcs({ RPC_URL: RPC }, { [RPC]: { error: "timeout" } });
    expect(named(decide(remote), "RPC").status).toBe("warn");
  });

  test("none set with something priced: a warning (lost answers cannot be confirmed)", () => {
    expect(named(decide(facts()), "RPC").status).toBe("warn");
    expect(decide(facts({}, { pricedNetworks: [] })).some((r) => r.name === "RPC")).toBe(false);
  });

  test("RPC_URL_BASE_SEPOLIA alone serves base-sepolia: no warning, and its chain id is checked", async () => {
    const sepolia = "https://base-sepolia.example/v2/k";
    const env = { RPC_URL_BASE_SEPOLIA: sepolia };
    const good = decide(await withRpcs(env, { [sepolia]: { value: 84532 } }));
    expect(good.filter((c) => c.status !== "ok")).toEqual([]);
    expect(named(good, "RPC base-sepolia").message).toContain("is chain 84532 (base-sepolia), reads base-sepolia");
    const wrong = named(decide(await withRpcs(env, { [sepolia]: { value: 8453 } })), "RPC base-sepolia");
    expect(wrong.status).toBe("warn");
    expect(wrong.message).toContain("point RPC_URL_BASE_SEPOLIA at base-sepolia");
  });

  test("the documented pair, RPC_URL on base and RPC_URL_BASE_SEPOLIA: each network served, no advice to move RPC_URL", async () => {
    const sepolia = "https://sepolia.example/rpc";
    const env = { RPC_URL: RPC, RPC_URL_BASE_SEPOLIA: sepolia };
    const both = await withRpcs(
      env,
      { [RPC]: { value: 8453 }, [sepolia]: { value: 84532 } },
      {
        pricedNetworks: ["base", "base-sepolia"],
        supported: {
          value: [
            { scheme: "exact", network: "base" },
            { scheme: "exact", network: "base-sepolia" },
          ],
        },
        publicUrlGiven: true,
      },
    );
    expect(both.served).toEqual({
      base: { variable: "RPC_URL", url: RPC },
      "base-sepolia": { variable: "RPC_URL_BASE_SEPOLIA", url: sepolia, network: "base-sepolia" },
    });
    const rpcResults = decide(both).filter((c) => c.name.startsWith("RPC"));
    expect(rpcResults.map((c) => c.status)).toEqual(["ok", "ok"]);
    expect(JSON.stringify(rpcResults)).not.toContain("point RPC_URL");
  });

  test("a wrong-chain RPC_URL_BASE is named, and the network falls back to RPC_URL when that is on it", async () => {
    const mainnet = "https://mainnet.example/rpc";
    const env = { RPC_URL: RPC, RPC_URL_BASE: mainnet };
    const f = await withRpcs(
      env,
      { [RPC]: { value: 8453 }, [mainnet]: { value: 84532 } },
      { pricedNetworks: ["base"] },
    );
    expect(f.served.base?.variable).toBe("RPC_URL");
    const r = named(decide(f), "RPC base");
    expect(r.status).toBe("warn");
    expect(r.message).toContain("is chain 84532 (base-sepolia), but base is chain 8453");
  });

  test("a URL with a key in its path, query or userinfo: the key is in no check's message", async () => {
    const keyed = "https://user:pw@rpc.example:8443/v2/SEKRIT?apikey=SEKRIT";
    for (const chainId of [{ value: 84532 }, { value: 8453 }, { error: "timeout" }] as Probed<number>[]) {
      const envs: Record<string, string>[] = [{ RPC_URL_BASE_SEPOLIA: keyed }, { ...LOCAL, RPC_URL: keyed }];
      for (const env of envs) {
        const text = JSON.stringify(decide(await withRpcs(env, { [keyed]: chainId })));
        expect(text).toContain("https://…@rpc.example:8443/…");
        expect(text).not.toContain("SEKRIT");
        expect(text).not.toContain("pw@");
      }
    }
    const remote = facts({ FACILITATOR_URL: "https://facilitator.example/k/SEKRIT" }, { supported: { error: "x" } });
    expect(JSON.stringify(decide(remote))).not.toContain("SEKRIT");
  });
});

describe("relayer, USDC, disk, files, database", () => {
  const relayer = (wei: bigint) => ({ relayer: { address: "0xabc", wei: { value: wei } } });

  test("a relayer with no ETH fails, little ETH warns, enough passes", () => {
    expect(named(decide(facts(LOCAL, relayer(0n))), "relayer gas").status).toBe("fail");
    expect(named(decide(facts(LOCAL, relayer(LOW_GAS_WEI - 1n))), "relayer gas").status).toBe("warn");
    const ok = named(decide(facts(LOCAL, relayer(2n * 10n ** 18n))), "relayer gas");
    expect(ok).toEqual({ name: "relayer gas", status: "ok", message: "relayer 0xabc has 2 ETH" });
  });

  test("no contract at the USDC address fails; an override on mainnet warns", () => {
    const none = { network: "base-sepolia", address: "0x1", overridden: true, hasCode: { value: false } };
    expect(named(decide(facts({}, { usdc: [none] })), "USDC base-sepolia").status).toBe("fail");
    const swapped = { network: "base", address: "0x2", overridden: true, hasCode: { value: true } };
    expect(named(decide(facts({}, { usdc: [swapped] })), "USDC base").status).toBe("warn");
  });

  test("free disk: below 100 MiB fails, below 1 GiB warns", () => {
    const mib = 1024 * 1024;
    expect(named(decide(facts({}, { freeBytes: { value: 50 * mib } })), "free disk").status).toBe("fail");
    expect(named(decide(facts({}, { freeBytes: { value: 500 * mib } })), "free disk").status).toBe("warn");
    expect(named(decide(facts({}, { freeBytes: { value: 5000 * mib } })), "free disk").status).toBe("ok");
  });

  test("file modes: a readable secret or a world-writable folder or ledger fails; a readable .env warns", () => {
    const files = [
      { label: "jwt-secret", mode: 0o100644, kind: "secret" as const },
      { label: "data", mode: 0o40777, kind: "directory" as const },
      { label: "cidgate.db", mode: 0o100666, kind: "database" as const },
      { label: ".env", mode: 0o100644, kind: "env" as const },
      { label: "ok.db", mode: 0o100644, kind: "database" as const },
    ];
    const results = decide(facts({}, { files }));
    expect(
      ["jwt-secret", "data", "cidgate.db", ".env", "ok.db"].map((l) => named(results, `file mode ${l}`).status),
    ).toEqual(["fail", "fail", "fail", "warn", "ok"]);
  });

  test("integrity: anything but ok fails", () => {
    expect(named(decide(facts({}, { integrity: { value: "ok" } })), "database integrity").status).toBe("ok");
    const bad = named(
      decide(facts({}, { integrity: { value: "*** in database main *** Page 3 is never used" } })),
      "database integrity",
    );
    expect(bad.status).toBe("fail");
  });
});
