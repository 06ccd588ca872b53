/**
 * The bytes served are the bytes paid for. A file is opened, and checked
 * against its index row, before anyone is charged; the download then streams
 * from that open handle, not from the path. So a file deleted, or replaced by
 * an editor's rename, while its payment settles (~1.5 s on a real chain) is
 * still served as paid: the handle keeps the old inode and its bytes.
 *
 * "Checked" means the identity (size, mtime, inode, ctime: identity.ts)
 * matches the row; when anything differs the file is in doubt and is re-hashed
 * through the handle, and served only if it still has the CID. After the
 * charge the handle is checked again (`stillSame`): a rewrite in place (same
 * inode, so the handle sees it too) moves the ctime, and the bytes are
 * re-hashed before one of them is sent. What is left: a rewrite in place while
 * the response is streaming, which no handle can stop short of copying the file.
 *
 * The body: when the path still names the very file the handle holds (same
 * inode and ctime, the usual case) the handle is closed and Bun sends the path
 * (sendfile, with Content-Length); the window left is Bun's own open, a few
 * microseconds later. When the path was deleted or renamed over, the bytes
 * stream from the handle, read in 256 KiB pieces (chunked: Bun sends no
 * Content-Length for a stream), and the handle is closed at the end, on
 * cancel (the client went away, the idle timeout) or on error. Not
 * `Bun.file(fd)`: Bun never says when it is done with a descriptor (it could
 * not be closed), and a slice of one fails the response.
 */
import { closeSync, fstatSync, openSync, read, statSync } from "node:fs";
import { promisify } from "node:util";
import { cidOfStream } from "./cid";
import { type FileIdentity, identityOf, sameIdentity } from "./identity";

const CHUNK = 262_144;

// Plain descriptors rather than fs/promises FileHandles: a FileHandle that is collected unclosed
// throws, and a response body nobody read (a client gone before the first byte) may be collected.
// open, fstat and close are synchronous (a few microseconds on a local disk; through the thread
// pool the four calls of a download cost ~70 us); reads are not.
const readFd = promisify(read);

const closeQuietly = (fd: number) => {
  try {
    closeSync(fd);
  } catch {
    // already closed: nothing to do
  }
};

/** Whatever way an OpenFile is dropped, its descriptor is closed once it is collected. */
const collected = new FinalizationRegistry<{ fd: number; closed: boolean }>((state) => {
  if (state.closed) return;
  state.closed = true;
  closeQuietly(state.fd);
});

export interface OpenFile {
  /**
   * The bytes [start, end] (inclusive; the whole file when omitted): the path when it still names this
   * file, else a stream from the handle. Either way the handle is closed by it.
   */
  body(range?: { start: number; end: number }): Blob | ReadableStream<Uint8Array>;
  /** Still the bytes that were checked at open: re-stat, and re-hash when in doubt. */
  stillSame(): Promise<boolean>;
  /** Idempotent. Called by the stream itself once it ends; call it when no body is taken (HEAD, a refusal). */
  close(): Promise<void>;
}

/** Chunks of the descriptor's bytes [start, end], read at explicit positions (its own offset is never used). */
async function* chunks(fd: number, start: number, end: number): AsyncGenerator<Uint8Array> {
  for (let at = start; at <= end; ) {
    const want = Math.min(CHUNK, end - at + 1);
    const buffer = new Uint8Array(want);
    const { bytesRead } = await readFd(fd, buffer, 0, want, at);
    if (bytesRead === 0) return; // shrank under us: the length check upstream says it changed
    yield bytesRead === want ? buffer : buffer.subarray(0, bytesRead);
    at += bytesRead;
  }
}

/** The CID of what the handle holds now, or undefined when it cannot be read. */
async function cidThrough(fd: number, size: number): Promise<string | undefined> {
  try {
    return (await cidOfStream(chunks(fd, 0, size - 1))).toString();
  } catch {
    return undefined;
  }
}

/**
 * Opens the file indexed under `cid` and checks it is still those bytes, or
 * undefined: gone, unreadable, or other bytes now (the index will catch up).
 */
export async function openIndexedFile(
  file: FileIdentity & { absolutePath: string },
  cid: string,
): Promise<OpenFile | undefined> {
  let fd: number;
  try {
    fd = openSync(file.absolutePath, "r");
  } catch {
    return undefined;
  }
  const state = { fd, closed: false };
  const close = async () => {
    if (state.closed) return;
    state.closed = true;
    closeQuietly(fd);
  };

  /** The identity the handle's bytes were last proved to have the CID at. */
  let proved: FileIdentity | undefined;
  const check = async (against: FileIdentity): Promise<boolean> => {
    try {
      const s = fstatSync(fd);
      if (!s.isFile()) return false;
      const now = identityOf(s);
      if (sameIdentity(now, against)) return true;
      if (now.size !== file.size) return false; // other bytes for sure: no need to read them
      if ((await cidThrough(fd, now.size)) !== cid) return false;
      // Re-hashed to the same CID: what may now change is measured from here. A second stat
      // catches a write that landed while hashing.
      const after = identityOf(fstatSync(fd));
      if (!sameIdentity(after, now)) return false;
      proved = now;
      return true;
    } catch {
      return false;
    }
  };

  if (!(await check(file))) {
    await close();
    return undefined;
  }
  proved ??= file;

  /** The path names the file the handle holds, unchanged since it was proved. */
  const pathStillNamesIt = () => {
    try {
      return proved !== undefined && sameIdentity(identityOf(statSync(file.absolutePath)), proved);
    } catch {
      return false;
    }
  };

  const opened: OpenFile = {
    body(range) {
      const start = range?.start ?? 0;
      const end = range?.end ?? file.size - 1;
      if (pathStillNamesIt()) {
        void close();
        const blob = Bun.file(file.absolutePath);
        return range ? blob.slice(start, end + 1) : blob;
      }
      const source = chunks(fd, start, end);
      const owner = opened; // the stream keeps the OpenFile (and so its descriptor) alive while it is read
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            const next = await source.next();
            if (next.done) {
              await owner.close();
              controller.close();
            } else controller.enqueue(next.value);
          } catch (e) {
            await owner.close();
            controller.error(e);
          }
        },
        async cancel() {
          await owner.close();
        },
      });
    },
    stillSame: () => (state.closed ? Promise.resolve(false) : check(proved ?? file)),
    close,
  };
  collected.register(opened, state);
  return opened;
}
