/**
 * CIDs as `ipfs add --cid-version=1` computes them, checked against vectors
 * that kubo publishes for fixed inputs:
 *
 * - kubo test/cli/cid_profiles_test.go (https://github.com/ipfs/kubo/blob/master/test/cli/cid_profiles_test.go),
 *   also asserted by js-ipfs-unixfs packages/ipfs-unixfs-importer/test/ipip-499-profiles.spec.ts:
 *   "hello world" -> bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e (a raw leaf);
 *   with kubo's legacy DAG shape (256 KiB chunks, balanced, 174 links per node, dag-pb
 *   leaves, CIDv0), deterministic bytes seeded "chunk-v0-seed" of 262144 / 262145 bytes ->
 *   QmWmRj3dFDZdb6ABvbmKhEL6TmPbAfBZ1t5BxsEyJrcZhE / QmYyLxtzZyW22zpoVAtKANLRHpDjZtNeDjQdJrcQNWoRkJ,
 *   and 174 x 256 KiB + 1 bytes seeded "v0-seed" (forces a second DAG layer) ->
 *   QmV81WL765sC8DXsRhE5fJv2rwhS4icHRaf3J9Zk5FdRnW.
 *   `--cid-version=1` keeps that chunker and layout and only switches leaves to raw
 *   and the root to CIDv1, so the same chunker/layout reproducing those vectors, plus
 *   raw leaves checked block by block below, is `ipfs add --cid-version=1`.
 * - The empty file: bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku, the raw
 *   CID of sha2-256("") (`ipfs add --cid-version=1` of an empty file; the sha2-256 of
 *   nothing is e3b0c442...b855, base32 of 0x01 0x55 0x12 0x20 + digest).
 *
 * The deterministic bytes are kubo's testutils.DeterministicRandomReader: the ChaCha20
 * keystream with key sha256(seed) and a zero nonce.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as dagPb from "@ipld/dag-pb";
import { chacha20 } from "@noble/ciphers/chacha";
import { MemoryBlockstore } from "blockstore-core/memory";
import { importBytes } from "ipfs-unixfs-importer";
import { base36 as base36Codec } from "multiformats/bases/base36";
import { sha256 } from "multiformats/hashes/sha2";
import {
  CHUNK_SIZE,
  canonicalCid,
  cidOfBytes,
  cidOfFile,
  cidOfStream,
  importerOptions,
  parseCid,
} from "../../src/content/cid";

async function deterministicBytes(size: number, seed: string): Promise<Uint8Array> {
  const key = (await sha256.digest(new TextEncoder().encode(seed))).digest;
  return chacha20(key, new Uint8Array(12), new Uint8Array(size));
}

const LEGACY_LEAVES = { cidVersion: 0 as const, rawLeaves: false };
const RAW = 0x55;
const DAG_PB = 0x70;

describe("CIDs of file contents", () => {
  test('"hello world" is the raw-leaf CID kubo publishes', async () => {
    const cid = await cidOfBytes(new TextEncoder().encode("hello world"));
    expect(cid.toString()).toBe("bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e");
  });

  test("the empty file is the raw CID of sha2-256 of nothing", async () => {
    expect((await cidOfBytes(new Uint8Array(0))).toString()).toBe(
      "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku",
    );
  });

  test("chunking at exactly 256 KiB matches kubo's published vectors", async () => {
    const at = await deterministicBytes(CHUNK_SIZE, "chunk-v0-seed");
    const over = await deterministicBytes(CHUNK_SIZE + 1, "chunk-v0-seed");
    expect((await cidOfBytes(at, LEGACY_LEAVES)).toString()).toBe("QmWmRj3dFDZdb6ABvbmKhEL6TmPbAfBZ1t5BxsEyJrcZhE");
    expect((await cidOfBytes(over, LEGACY_LEAVES)).toString()).toBe("QmYyLxtzZyW22zpoVAtKANLRHpDjZtNeDjQdJrcQNWoRkJ");
  });

  test("the balanced layout rebalances past 174 links exactly as kubo does", async () => {
    const big = await deterministicBytes(174 * CHUNK_SIZE + 1, "v0-seed");
    expect((await cidOfBytes(big, LEGACY_LEAVES)).toString()).toBe("QmV81WL765sC8DXsRhE5fJv2rwhS4icHRaf3J9Zk5FdRnW");
  });

  test("one chunk is a bare raw block; more is a dag-pb root over raw leaves of 256 KiB", async () => {
    const one = await deterministicBytes(CHUNK_SIZE, "chunk-v0-seed");
    const oneCid = await cidOfBytes(one);
    expect(oneCid.version).toBe(1);
    expect(oneCid.code).toBe(RAW);
    expect(oneCid.toString()).toStartWith("bafkrei");

    const two = await deterministicBytes(CHUNK_SIZE + 1, "chunk-v0-seed");
    const blocks = new MemoryBlockstore();
    const { cid } = await importBytes(two, blocks, importerOptions());
    expect(cid.toString()).toStartWith("bafybei");
    expect(cid.code).toBe(DAG_PB);
    const parts: Uint8Array[] = [];
    for await (const part of blocks.get(cid)) parts.push(part);
    const root = dagPb.decode(Buffer.concat(parts));
    expect(root.Links.map((l) => [l.Hash.code, l.Hash.version, l.Tsize])).toEqual([
      [RAW, 1, CHUNK_SIZE],
      [RAW, 1, 1],
    ]);
    // The leaves are the plain bytes of each chunk, so each leaf's CID is the raw CID of its slice.
    expect(root.Links[0].Hash.toString()).toBe((await cidOfBytes(two.subarray(0, CHUNK_SIZE))).toString());
    // And computing it without keeping blocks gives the same root.
    expect((await cidOfBytes(two)).toString()).toBe(cid.toString());
  });

  test("a file on disk, streamed in small pieces, has the CID of its bytes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cidgate-cid-"));
    try {
      const bytes = await deterministicBytes(3 * CHUNK_SIZE + 12345, "stream");
      writeFileSync(join(dir, "f.bin"), bytes);
      const expected = (await cidOfBytes(bytes)).toString();
      expect((await cidOfFile(join(dir, "f.bin"))).toString()).toBe(expected);
      const pieces = function* () {
        for (let i = 0; i < bytes.length; i += 1000) yield bytes.subarray(i, i + 1000);
      };
      expect((await cidOfStream(pieces())).toString()).toBe(expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("parsing CIDs", () => {
  test("any spelling maps to the stored one; junk is undefined", () => {
    const v1 = "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e";
    const base36 = parseCid(v1)!.toString(base36Codec);
    expect(base36).toStartWith("k");
    expect(canonicalCid(base36)).toBe(v1);
    expect(canonicalCid("QmWmRj3dFDZdb6ABvbmKhEL6TmPbAfBZ1t5BxsEyJrcZhE")).toBe(
      "QmWmRj3dFDZdb6ABvbmKhEL6TmPbAfBZ1t5BxsEyJrcZhE",
    );
    for (const bad of ["", "hello", "bafkreinope", "../etc/passwd", "x".repeat(300)])
      expect(canonicalCid(bad)).toBeUndefined();
  });
});
