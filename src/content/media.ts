/**
 * Media type of a content file, from its name (the same table Bun uses to
 * serve files). It becomes the 402 `mimeType` and the paid response's
 * Content-Type, so it is decided once at indexing time.
 */
export function mediaTypeOf(path: string): string {
  return Bun.file(path).type || "application/octet-stream";
}
