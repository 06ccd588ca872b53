/**
 * The page script, bundled from client/ by Bun.build when the app is made
 * (viem and mipd tree-shaken, minified) and kept in memory with
 * its gzip form: no CDN, no build step before `npm start`, and the bundle
 * always matches the source it is served beside. One build per process
 * (about 20-300 ms depending on load, off the request path).
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const CLIENT_DIR = join(import.meta.dir, "client");
const SHARED = ["format.ts", "offer-data.ts"].map((f) => join(import.meta.dir, f));

export interface Asset {
  body: Uint8Array;
  gzip: Uint8Array;
  etag: string;
}

/** Changes with the script's sources: the page links `?v=` it, so the script can be cached for good. */
export const SCRIPT_VERSION = createHash("sha256")
  .update(
    [...readdirSync(CLIENT_DIR).map((f) => join(CLIENT_DIR, f)), ...SHARED]
      .sort()
      .map((f) => readFileSync(f, "utf8"))
      .join("\0"),
  )
  .digest("hex")
  .slice(0, 16);

let built: Promise<Asset> | undefined;

/** The bundled page script (built once per process). */
export function pageScript(): Promise<Asset> {
  built ??= (async () => {
    const result = await Bun.build({
      entrypoints: [join(CLIENT_DIR, "app.ts")],
      target: "browser",
      format: "esm",
      minify: true,
      sourcemap: "none",
    });
    const output = result.outputs[0];
    if (!result.success || !output) throw new Error(`paywall script did not build: ${result.logs.join("; ")}`);
    const body = new Uint8Array(await output.arrayBuffer());
    return { body, gzip: Bun.gzipSync(body, { level: 9 }), etag: `"${SCRIPT_VERSION}"` };
  })();
  built.catch(() => {
    built = undefined;
  });
  return built;
}
