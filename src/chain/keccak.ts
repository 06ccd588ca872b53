/**
 * Keccak-256 (Ethereum's, not SHA3-256: the padding differs) on the hot
 * paths: the EIP-191 hash of a sign-in message, the address of a recovered
 * public key, EIP-55 checksums, the EIP-712 digest of an authorization.
 *
 * viem's keccak is pure JS (@noble/hashes) and costs 45-75 us for a
 * 450-byte sign-in message on this JIT, 3-4 us here: the `keccak` npm
 * package's N-API addon (XKCP's reference sponge, prebuilt for linux-x64,
 * darwin-x64 and win32-x64, so nothing compiles at install). Its JS wrapper
 * builds a stream object per hash (~10 us), so the addon's sponge state is
 * used directly: initialized, absorbed and squeezed in one synchronous call,
 * so one state serves the whole process. Where the addon does not load (no
 * prebuild for the platform), viem it is: same digests, slower. A test
 * checks both against viem on random inputs of every length around the
 * 136-byte block.
 */
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { type Hex, keccak256 as viemKeccak256 } from "viem";

interface KeccakState {
  initialize(rate: number, capacity: number): void;
  absorb(data: Uint8Array): void;
  squeeze(length: number): Buffer;
}

/** The addon's sponge, or null where it does not load. */
function loadNative(): KeccakState | null {
  try {
    const require = createRequire(import.meta.url);
    const root = dirname(require.resolve("keccak/package.json"));
    // node-gyp-build is the package's own loader (a dependency of `keccak`): it picks the prebuild.
    const State = createRequire(`${root}/package.json`)("node-gyp-build")(root);
    // Some runtimes load the file but not the N-API class (the package checks the same).
    if (typeof State !== "function") return null;
    const state = new State() as KeccakState;
    return state;
  } catch {
    return null;
  }
}

const native = loadNative();

/** Whether the native sponge is in use (else viem's JS). */
export const nativeKeccak = native !== null;

/** Keccak-256 as rate 1088 / capacity 512 with Keccak's own padding (the addon pads at squeeze). */
function nativeDigest(state: KeccakState, data: Uint8Array): Uint8Array {
  state.initialize(1088, 512);
  state.absorb(data);
  return state.squeeze(32);
}

const toBuffer = (data: Uint8Array) =>
  Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);

/**
 * Keccak-256 of `data`, 32 bytes. `useNative: false` forces viem's JS (the
 * fallback; tests compare the two).
 */
export function keccak256(data: Uint8Array, useNative = true): Uint8Array {
  if (native && useNative) return nativeDigest(native, toBuffer(data));
  return Buffer.from(viemKeccak256(data).slice(2), "hex");
}

/** Keccak-256 of `data` as 0x-prefixed lower-case hex (viem's `keccak256` answer). */
export function keccak256Hex(data: Uint8Array): Hex {
  return `0x${Buffer.from(keccak256(data)).toString("hex")}`;
}

const EIP191_PREFIX = "\x19Ethereum Signed Message:\n";

/**
 * The EIP-191 (version 0x45) hash a wallet signs for `personal_sign`:
 * keccak256("\x19Ethereum Signed Message:\n" + byte length + message), as
 * viem's `hashMessage(message)` for a string message.
 */
export function hashMessage(message: string, useNative = true): Uint8Array {
  const body = Buffer.from(message, "utf8");
  return keccak256(Buffer.concat([Buffer.from(`${EIP191_PREFIX}${body.length}`, "utf8"), body]), useNative);
}
