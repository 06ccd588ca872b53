/**
 * Writes the example content (content/): a short article, a small PNG and a
 * small uncompressed AVI. Everything is generated here, with no tools and no
 * downloads, so the files are reproducible and their licence is ours. The
 * video is just over 256 KiB on purpose: its CID is a dag-pb root over two
 * raw leaves (bafybei...), while the other two are single raw blocks (bafkrei...).
 *
 *   bun scripts/make-example-content.ts [dir]
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deflateSync } from "node:zlib";

const dir = process.argv[2] ?? "content";

// ---------- PNG ----------
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function pngChunk(type: string, data: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** A scene: sky gradient, sea, and a sun at height `sun` (0 = horizon, 1 = top). */
function scene(w: number, h: number, sun: number, x: number, y: number): [number, number, number] {
  const horizon = Math.round(h * 0.62);
  const sunX = w * 0.5;
  const sunY = horizon - sun * horizon * 0.8;
  const r = h * 0.12;
  const d = Math.hypot(x - sunX, y - sunY);
  if (y < horizon) {
    if (d < r) return [255, 214, 102];
    const t = y / horizon;
    const glow = Math.max(0, 1 - d / (r * 4)) * 60;
    return [Math.min(255, 40 + 200 * t + glow), Math.min(255, 60 + 90 * t + glow / 2), Math.round(140 - 60 * t)];
  }
  // The sea mirrors the sun as a rippled band.
  const ripple = Math.sin((y - horizon) * 1.3 + x * 0.15) > 0.6 && Math.abs(x - sunX) < r * (1.2 - (y - horizon) / h);
  return ripple ? [250, 200, 110] : [20, Math.round(60 + (y - horizon) * 0.5), 110];
}

function png(w: number, h: number): Buffer {
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    raw[y * (w * 3 + 1)] = 0; // filter: none
    for (let x = 0; x < w; x++) {
      const [r, g, b] = scene(w, h, 0.55, x, y);
      raw.set([r, g, b], y * (w * 3 + 1) + 1 + x * 3);
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", deflateSync(raw, { level: 9 })),
    pngChunk("IEND", new Uint8Array()),
  ]);
}

// ---------- AVI (RIFF, one uncompressed 24-bit video stream) ----------
function fourcc(s: string) {
  return Buffer.from(s, "latin1");
}
function riffChunk(id: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(id, 0, "latin1");
  head.writeUInt32LE(data.length, 4);
  return Buffer.concat([head, data, data.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0)]);
}
function riffList(type: string, parts: Buffer[]): Buffer {
  return riffChunk("LIST", Buffer.concat([fourcc(type), ...parts]));
}

function avi(w: number, h: number, frames: number, fps: number): Buffer {
  const frameBytes = w * 3 * h; // rows of w*3 bytes; w*3 is a multiple of 4 here
  const frameData: Buffer[] = [];
  for (let f = 0; f < frames; f++) {
    const buf = Buffer.alloc(frameBytes);
    const sun = f / (frames - 1);
    for (let y = 0; y < h; y++) {
      const row = h - 1 - y; // DIBs are stored bottom-up
      for (let x = 0; x < w; x++) {
        const [r, g, b] = scene(w, h, sun, x, y);
        buf.set([b, g, r], row * w * 3 + x * 3); // BGR
      }
    }
    frameData.push(buf);
  }
  const avih = Buffer.alloc(56);
  avih.writeUInt32LE(Math.round(1e6 / fps), 0);
  avih.writeUInt32LE(frameBytes * fps, 4);
  avih.writeUInt32LE(0x10, 12); // AVIF_HASINDEX
  avih.writeUInt32LE(frames, 16);
  avih.writeUInt32LE(1, 24); // streams
  avih.writeUInt32LE(frameBytes, 28);
  avih.writeUInt32LE(w, 32);
  avih.writeUInt32LE(h, 36);
  const strh = Buffer.alloc(56);
  strh.write("vids", 0, "latin1");
  strh.write("DIB ", 4, "latin1");
  strh.writeUInt32LE(1, 20); // scale
  strh.writeUInt32LE(fps, 24); // rate
  strh.writeUInt32LE(frames, 32); // length
  strh.writeUInt32LE(frameBytes, 36);
  strh.writeInt32LE(-1, 40); // quality: default
  strh.writeInt16LE(w, 52);
  strh.writeInt16LE(h, 54);
  const strf = Buffer.alloc(40);
  strf.writeUInt32LE(40, 0);
  strf.writeInt32LE(w, 4);
  strf.writeInt32LE(h, 8);
  strf.writeUInt16LE(1, 12);
  strf.writeUInt16LE(24, 14);
  strf.writeUInt32LE(0, 16); // BI_RGB
  strf.writeUInt32LE(frameBytes, 20);
  const hdrl = riffList("hdrl", [
    riffChunk("avih", avih),
    riffList("strl", [riffChunk("strh", strh), riffChunk("strf", strf)]),
  ]);
  const chunks = frameData.map((d) => riffChunk("00db", d));
  const movi = riffList("movi", chunks);
  const idx = Buffer.alloc(16 * frames);
  let offset = 4; // from the "movi" fourcc
  chunks.forEach((c, i) => {
    idx.write("00db", i * 16, "latin1");
    idx.writeUInt32LE(0x10, i * 16 + 4); // AVIIF_KEYFRAME
    idx.writeUInt32LE(offset, i * 16 + 8);
    idx.writeUInt32LE(frameBytes, i * 16 + 12);
    offset += c.length;
  });
  const body = Buffer.concat([fourcc("AVI "), hdrl, movi, riffChunk("idx1", idx)]);
  return riffChunk("RIFF", body);
}

const ARTICLE = `# Why sell files one at a time

A file has a price the moment someone would rather pay for it than go without.
Subscriptions ask a reader to commit before they know what they will get;
ads ask them to pay with attention they did not offer. Paying per file asks
for neither: this article costs one cent, once, and then it is yours.

## How it works here

This page is served by **cidgate**. When your browser or script asked for it,
the server answered \`402 Payment Required\` with a short list of ways to pay:
an amount of USDC, a network, and the address that receives it. Your client
signed an authorization for exactly that amount, sent it back in a header, and
the server had a facilitator settle it on chain before sending a single byte.

No account, no card form, no checkout page. The price lives in a YAML file in
the creator's git repository, next to the content it prices.

## Why a content identifier

Every file here is known by its IPFS CID: a hash of its bytes. If the file
changes, so does its name, so what you paid for is exactly what you get, and
anyone can check it with \`ipfs add --cid-version=1 --only-hash\`.

## What it costs to run

One process, one SQLite file, and a folder of files. The ledger of payments is
the same database that stops a payment from being used twice.

*Thanks for paying a cent for this. That is the whole business model.*
`;

mkdirSync(join(dir, "articles"), { recursive: true });
mkdirSync(join(dir, "images"), { recursive: true });
mkdirSync(join(dir, "video"), { recursive: true });
writeFileSync(join(dir, "articles/why-pay-per-file.md"), ARTICLE);
writeFileSync(join(dir, "images/sunrise.png"), png(160, 100));
writeFileSync(join(dir, "video/sunrise.avi"), avi(80, 60, 19, 8));
console.log(`wrote example content to ${dir}/`);
