/** EIP-55 addresses, as every table stores them. */
import { getAddress } from "viem";

/*
 * EIP-55 checksumming hashes the address (keccak); the same few addresses
 * (buyers, sellers, tokens) come back on every request, so remember them.
 */
const CHECKSUMMED_MAX = 10_000;
const checksummed = new Map<string, `0x${string}`>();
export function checksum(address: string): `0x${string}` {
  const key = address.toLowerCase();
  let hit = checksummed.get(key);
  if (!hit) {
    hit = getAddress(key);
    if (checksummed.size >= CHECKSUMMED_MAX) checksummed.clear();
    checksummed.set(key, hit);
  }
  return hit;
}

/** The checksummed spelling of a 0x-prefixed 20-byte hex address, or undefined when it is not one. */
export function checksumOrUndefined(address: string): `0x${string}` | undefined {
  return /^0x[0-9a-fA-F]{40}$/.test(address) ? checksum(address) : undefined;
}
