import { describe, expect, test } from "bun:test";
import { type Hex, keccak256, recoverAddress, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount, sign } from "viem/accounts";
import { nativeSecp256k1, recoverLowerCase } from "../../src/gateway/proof";

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const key = generatePrivateKey();
const signer = privateKeyToAccount(key).address.toLowerCase() as `0x${string}`;
const hash = keccak256(toHex("some authorization"));
const word = (n: bigint) => n.toString(16).padStart(64, "0");

async function signatureOf(h: Hex): Promise<{ r: bigint; s: bigint; v: number }> {
  const sig = await sign({ hash: h, privateKey: key });
  return { r: BigInt(sig.r), s: BigInt(sig.s), v: Number(sig.v) };
}
const encode = (r: bigint, s: bigint, v: number) => `0x${word(r)}${word(s)}${v.toString(16).padStart(2, "0")}` as Hex;

/** viem's own answer, as the gateway compares it: lower case, or null when viem refuses. */
async function viemAnswer(h: Hex, signature: Hex) {
  try {
    return (await recoverAddress({ hash: h, signature })).toLowerCase();
  } catch {
    return null;
  }
}

describe("signature recovery", () => {
  test("the native addon loads where prebuilds exist (always on linux-x64), and only there", () => {
    // prebuilds ship for linux-x64, darwin-arm64, win32-x64; elsewhere the viem fallback is expected
    const platform = `${process.platform}-${process.arch}`;
    const prebuilt = ["linux-x64", "darwin-arm64", "win32-x64"].includes(platform);
    expect({ platform, native: nativeSecp256k1 !== null }).toEqual({ platform, native: prebuilt });
    if (platform === "linux-x64") expect(typeof nativeSecp256k1?.ecdsaRecover).toBe("function");
  });

  test("recovery takes the native path by default when the addon is loaded", async () => {
    const native = nativeSecp256k1;
    if (!native) {
      // no addon on this platform (the test above pins which ones): the default is viem's answer
      const { r, s, v } = await signatureOf(hash);
      expect(await recoverLowerCase(hash, encode(r, s, v))).toBe(signer);
      return;
    }
    // observation only: count calls into the addon, answers unchanged
    const real = native.ecdsaRecover;
    let calls = 0;
    native.ecdsaRecover = (...a) => (calls++, real.apply(native, a));
    try {
      const { r, s, v } = await signatureOf(hash);
      expect(await recoverLowerCase(hash, encode(r, s, v))).toBe(signer);
      expect(calls).toBe(1);
      expect(await recoverLowerCase(hash, encode(r, s, v), null)).toBe(signer);
      expect(calls).toBe(1); // the explicit fallback never touches the addon
    } finally {
      native.ecdsaRecover = real;
    }
  });

  test("native and viem fallback agree with viem for valid and invalid signatures", async () => {
    const { r, s, v } = await signatureOf(hash);
    const other = keccak256(toHex("another authorization"));
    const cases: [string, Hex, Hex, string | null | "someone else"][] = [
      ["valid, v 27/28", hash, encode(r, s, v), signer],
      ["valid, bare recovery bit", hash, encode(r, s, v - 27), signer],
      ["other message", other, encode(r, s, v), "someone else"],
      ["flipped recovery bit", hash, encode(r, s, v === 27 ? 28 : 27), "someone else"],
      ["v = 29", hash, encode(r, s, 29), null],
      ["r = 0", hash, encode(0n, s, v), null],
      ["s = 0", hash, encode(r, 0n, v), null],
      ["r >= n", hash, encode(N + 1n, s, v), null],
      ["all ones", hash, `0x${"f".repeat(130)}`, null],
    ];
    for (const [name, h, sig, expected] of cases) {
      const native: string | null = await recoverLowerCase(h, sig);
      const fallback: string | null = await recoverLowerCase(h, sig, null);
      const reference = await viemAnswer(h, sig);
      expect({ name, native, fallback }).toEqual({ name, native: reference, fallback: reference });
      if (expected === "someone else") expect({ name, native }).not.toEqual({ name, native: signer });
      else expect({ name, native }).toEqual({ name, native: expected });
    }
  });

  test("the malleated twin (high s) recovers the signer on both paths, as viem does", async () => {
    const { r, s, v } = await signatureOf(hash);
    const twin = encode(r, N - s, v === 27 ? 28 : 27);
    expect(await viemAnswer(hash, twin)).toBe(signer);
    expect(await recoverLowerCase(hash, twin)).toBe(signer);
    expect(await recoverLowerCase(hash, twin, null)).toBe(signer);
  });

  test("wrong length is null, never a throw", async () => {
    expect(await recoverLowerCase(hash, "0x1234")).toBeNull();
    expect(await recoverLowerCase(hash, "0x1234", null)).toBeNull();
  });
});
