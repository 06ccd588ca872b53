/**
 * The native keccak (src/chain/keccak.ts) and what is built on it: EIP-191
 * message hashes, EIP-55 checksums and the signer of a sign-in, each against
 * viem on random inputs. A wrong digest here would let nobody sign in (or,
 * worse, the wrong wallet), so every length around the 136-byte block is tried.
 */
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { getAddress, recoverMessageAddress, hashMessage as viemHashMessage, keccak256 as viemKeccak256 } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { checksum, eip55 } from "../../src/chain/address";
import { hashMessage, keccak256, keccak256Hex, nativeKeccak } from "../../src/chain/keccak";
import { recoverLowerCase } from "../../src/gateway/proof";

const hex = (b: Uint8Array) => `0x${Buffer.from(b).toString("hex")}` as const;

describe("keccak256", () => {
  test("the native addon loads where prebuilds exist (always on linux-x64)", () => {
    const platform = `${process.platform}-${process.arch}`;
    const prebuilt = ["linux-x64", "darwin-x64", "win32-x64"].includes(platform);
    expect({ platform, native: nativeKeccak }).toEqual({ platform, native: prebuilt });
  });

  test("native and fallback equal viem for every length 0..420 and a few large inputs", () => {
    const lengths = [...Array.from({ length: 421 }, (_, i) => i), 1087, 1088, 1089, 4096, 65_537];
    for (const n of lengths) {
      const data = randomBytes(n);
      const reference = viemKeccak256(data);
      expect({ n, native: hex(keccak256(data)) }).toEqual({ n, native: reference });
      expect({ n, fallback: hex(keccak256(data, false)) }).toEqual({ n, fallback: reference });
      expect(keccak256Hex(data)).toBe(reference);
    }
  });

  test("a Uint8Array view into a larger buffer hashes only its own bytes", () => {
    const backing = randomBytes(300);
    const view = new Uint8Array(backing.buffer, backing.byteOffset + 7, 200);
    expect(hex(keccak256(view))).toBe(viemKeccak256(view));
    // the shared sponge is reset between calls: the same input twice, interleaved with others, agrees
    const a = keccak256(view);
    keccak256(randomBytes(999));
    expect(hex(keccak256(view))).toBe(hex(a));
  });

  test("the known vectors: empty input and 'abc'", () => {
    expect(hex(keccak256(new Uint8Array()))).toBe("0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
    expect(hex(keccak256(Buffer.from("abc")))).toBe(
      "0x4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45",
    );
  });
});

describe("EIP-191 hashMessage", () => {
  test("equals viem's hashMessage on random ASCII, multi-byte UTF-8 and sign-in sized messages", () => {
    const alphabet = "abcXYZ019 :/.-\n\u00e9\u4e2d\u{1F600}";
    const chars = [...alphabet];
    for (let i = 0; i < 600; i++) {
      const n = i < 500 ? i : 400 + Math.floor(Math.random() * 600);
      let message = "";
      for (let j = 0; j < n; j++) message += chars[Math.floor(Math.random() * chars.length)];
      const reference = viemHashMessage(message);
      expect({ i, native: hex(hashMessage(message)) }).toEqual({ i, native: reference });
      expect({ i, fallback: hex(hashMessage(message, false)) }).toEqual({ i, fallback: reference });
    }
  });
});

describe("EIP-55 checksums", () => {
  test("eip55 and checksum equal viem's getAddress on 3,000 random addresses, whatever the input case", () => {
    for (let i = 0; i < 3000; i++) {
      const lower = `0x${randomBytes(20).toString("hex")}`;
      const reference = getAddress(lower);
      expect(eip55(lower)).toBe(reference);
      expect(checksum(lower.toUpperCase().replace("0X", "0x"))).toBe(reference);
      expect(checksum(reference)).toBe(reference);
    }
  });

  test("not an address: checksum throws as before, never a made-up spelling", () => {
    expect(() => checksum("0x1234")).toThrow();
    expect(() => checksum(`0x${"g".repeat(40)}`)).toThrow();
  });
});

describe("the sign-in signer", () => {
  test("native recovery over the native EIP-191 hash names the signer viem names, for 150 random wallets", async () => {
    for (let i = 0; i < 150; i++) {
      const account = privateKeyToAccount(generatePrivateKey());
      const message = `cidgate.example wants you to sign in with your Ethereum account:\n${account.address}\n\nnonce ${i} ${randomBytes(8).toString("hex")}`;
      const signature = await account.signMessage({ message });
      const reference = (await recoverMessageAddress({ message, signature })).toLowerCase() as `0x${string}`;
      expect<string>(reference).toBe(account.address.toLowerCase());
      expect(await recoverLowerCase(hashMessage(message), signature)).toBe(reference);
      expect(await recoverLowerCase(hashMessage(message), signature, null)).toBe(reference);
      // another message under the same signature recovers someone else (or nobody)
      expect(await recoverLowerCase(hashMessage(`${message}.`), signature)).not.toBe(reference);
    }
  });

  test("a digest that is not 32 bytes is nobody, never a throw", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const signature = await account.signMessage({ message: "x" });
    expect(await recoverLowerCase(new Uint8Array(31), signature)).toBeNull();
  });
});
