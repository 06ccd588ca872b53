/**
 * IPFS CIDs: parsed by `multiformats` (v0 `Qm...` and v1 in any multibase),
 * and computed for file contents exactly as `ipfs add --cid-version=1` does
 * (raw leaves, 256 KiB fixed chunks, balanced DAG of at most 174 links per
 * node): `bafkrei...` for a file of one chunk, a dag-pb root `bafybei...` above.
 */
import { type ImporterOptions, importByteStream, importBytes } from "ipfs-unixfs-importer";
import { fixedSize } from "ipfs-unixfs-importer/chunker";
import { balanced } from "ipfs-unixfs-importer/layout";
import { base32 } from "multiformats/bases/base32";
import { base36 } from "multiformats/bases/base36";
import { base58btc } from "multiformats/bases/base58";
import { CID } from "multiformats/cid";

const decoders = base32.decoder.or(base36.decoder).or(base58btc.decoder);

/** The CID in `text`, or undefined when it is not one. */
export function parseCid(text: string): CID | undefined {
  if (text.length === 0 || text.length > 200) return undefined;
  try {
    return text.startsWith("Qm") ? CID.parse(text) : CID.parse(text, decoders);
  } catch {
    return undefined;
  }
}

/** The stored spelling of a CID (v1 in base32, v0 as Qm...), or undefined when `text` is not one. */
export function canonicalCid(text: string): string | undefined {
  return parseCid(text)?.toString();
}

/** Kubo's chunk size and DAG width for `ipfs add` (the legacy profile that `--cid-version=1` keeps). */
export const CHUNK_SIZE = 262_144;
export const MAX_CHILDREN_PER_NODE = 174;

/**
 * Importer options of `ipfs add --cid-version=1`. Spelled out rather than
 * left to the importer's defaults, which follow newer profiles over time.
 * `overrides` exists so tests can check the same chunker and layout against
 * vectors published for other leaf encodings.
 */
export function importerOptions(overrides: Partial<ImporterOptions> = {}): ImporterOptions {
  return {
    cidVersion: 1,
    rawLeaves: true,
    reduceSingleLeafToSelf: true,
    chunker: fixedSize({ chunkSize: CHUNK_SIZE }),
    layout: balanced({ maxChildrenPerNode: MAX_CHILDREN_PER_NODE }),
    ...overrides,
  };
}

/** Only the CID is wanted: blocks are hashed and dropped, never kept in memory. */
const discardBlocks = { put: async (cid: CID) => cid };

/** CID of in-memory bytes. */
export async function cidOfBytes(bytes: Uint8Array, overrides?: Partial<ImporterOptions>): Promise<CID> {
  return (await importBytes(bytes, discardBlocks, importerOptions(overrides))).cid;
}

/** CID of a byte stream (read once, in chunks). */
export async function cidOfStream(
  stream: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  overrides?: Partial<ImporterOptions>,
): Promise<CID> {
  return (await importByteStream(stream, discardBlocks, importerOptions(overrides))).cid;
}

/** CID of a file on disk, streamed so a large file never sits in memory whole. */
export async function cidOfFile(path: string): Promise<CID> {
  return cidOfStream(Bun.file(path).stream() as unknown as AsyncIterable<Uint8Array>);
}
