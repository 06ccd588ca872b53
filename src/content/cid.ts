/**
 * IPFS CIDs, parsed by `multiformats` (v0 `Qm...` and v1 in any multibase).
 */
import { CID } from "multiformats/cid";
import { base32 } from "multiformats/bases/base32";
import { base36 } from "multiformats/bases/base36";
import { base58btc } from "multiformats/bases/base58";

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
