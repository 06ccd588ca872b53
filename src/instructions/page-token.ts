/**
 * Opaque page tokens for keyset pagination: the last key of a page, tagged by
 * list kind and base64url-encoded. Opaque so clients do not build them (and we
 * may change the key later); tagged so a token of one list fails cleanly on another.
 */
import { badRequest } from "../http/errors";

type Kind = "i" | "c"; // instructions (key: id), cids (key: cid)

export function encodePageToken(kind: Kind, key: string): string {
  return Buffer.from(`${kind}1:${key}`).toString("base64url");
}

/** The key inside `token`, or a 400 naming `pageToken`. */
export function decodePageToken(kind: Kind, token: string): string {
  const text = /^[A-Za-z0-9_-]{1,400}$/.test(token) ? Buffer.from(token, "base64url").toString("utf8") : "";
  const prefix = `${kind}1:`;
  if (!text.startsWith(prefix) || text.length === prefix.length) {
    throw badRequest("pageToken is not a valid page token", [
      { path: "pageToken", message: "is not a valid page token" },
    ]);
  }
  return text.slice(prefix.length);
}
