/**
 * JSON request bodies for the management API: at most 1 MiB (413), JSON only
 * (415), valid JSON (400). Done as a parse hook so the limits hold through
 * `app.handle` too, not only behind Bun.serve's `maxRequestBodySize`, and so a
 * chunked body without Content-Length is still cut off at the limit.
 *
 * A request without a body (the pinata SDK sends `Content-Type:
 * application/json` on PUT/DELETE with no body) parses to `null`, never an error.
 */
import { Elysia } from "elysia";
import { ApiError } from "./errors";

export const MAX_BODY_BYTES = 1024 * 1024;

const tooLarge = () =>
  new ApiError(413, "payload_too_large", `the request body exceeds ${MAX_BODY_BYTES} bytes (1 MiB)`);

function isJsonType(contentType: string | null): boolean {
  if (!contentType) return false;
  const type = contentType.split(";")[0].trim().toLowerCase();
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}

/** Reads the body up to the limit; stops reading (and answers 413) as soon as it is passed. */
async function readLimited(request: Request): Promise<Uint8Array> {
  const body = request.body;
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** Parses a JSON body within the limits; `null` when there is no body. */
export async function parseJsonBody(request: Request): Promise<unknown> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > MAX_BODY_BYTES) throw tooLarge();
  const bytes = await readLimited(request);
  if (bytes.byteLength === 0) return null;
  if (!isJsonType(request.headers.get("content-type"))) {
    throw new ApiError(415, "unsupported_media_type", "the request body must be JSON (Content-Type: application/json)");
  }
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new ApiError(400, "invalid_json", "the request body is not valid JSON");
  }
}

/** Use in a feature module: every body of its routes goes through parseJsonBody. */
export const jsonBody = new Elysia({ name: "json-body" }).onParse({ as: "scoped" }, ({ request }) =>
  parseJsonBody(request),
);
