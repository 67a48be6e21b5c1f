/**
 * What {@link StrongroomClient.upload} reads from, a piece at a time: bytes already in memory, a
 * `Blob` (a browser `File` is one), a `ReadableStream` or any async iterable of chunks. Nothing here
 * holds more than the piece asked for (and the rest of the source chunk it was cut from).
 */
export type UploadSource = Uint8Array | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** Reads a source from its start, in pieces of the length asked for. */
export interface SourceReader {
  /** The source's length when it says so itself (bytes, a Blob), else null. */
  readonly size: number | null;
  /**
   * The next `length` bytes; fewer only at the source's end (an empty array once it is over). The
   * piece may be a view of a buffer the next read reuses: use it before reading on.
   */
  read(length: number): Promise<Uint8Array>;
  /**
   * What to send for the piece the last read returned. A `Blob` where the platform has one: a
   * browser streams a Blob body to the network from its own storage, where a byte-array body is
   * copied in the page (and, in Chromium, sent many times slower).
   */
  body(piece: Uint8Array): Blob | Uint8Array;
  /** Lets the source go (a stream is cancelled); reading afterwards is an error. */
  close(): Promise<void>;
}

export function readerOf(source: UploadSource): SourceReader {
  if (source instanceof Uint8Array) return bytesReader(source);
  if (typeof Blob !== 'undefined' && source instanceof Blob) return blobReader(source);
  if (isReadableStream(source)) {
    const reader = source.getReader();
    return pulledReader(
      async () => {
        const r = await reader.read();
        return r.done ? null : r.value;
      },
      async () => {
        await reader.cancel().catch(() => undefined);
      },
    );
  }
  if (isAsyncIterable(source)) {
    const it = source[Symbol.asyncIterator]();
    return pulledReader(
      async () => {
        const r = await it.next();
        return r.done ? null : r.value;
      },
      async () => {
        await it.return?.().catch(() => undefined);
      },
    );
  }
  throw new TypeError('upload() takes a Uint8Array, a Blob, a ReadableStream or an async iterable of Uint8Array');
}

/** A copy of `piece` to send: as a Blob where there is one (see {@link SourceReader.body}). */
function copiedBody(piece: Uint8Array): Blob | Uint8Array {
  return typeof Blob === 'undefined' ? piece.slice() : new Blob([piece as Uint8Array<ArrayBuffer>]);
}

function bytesReader(bytes: Uint8Array): SourceReader {
  let at = 0;
  return {
    size: bytes.length,
    read: async (length) => {
      const piece = bytes.subarray(at, Math.min(bytes.length, at + length));
      at += piece.length;
      return piece;
    },
    body: copiedBody,
    close: async () => undefined,
  };
}

function blobReader(blob: Blob): SourceReader {
  let at = 0;
  let last: Blob = blob.slice(0, 0);
  let scratch: ArrayBuffer | null = null;
  return {
    size: blob.size,
    read: async (length) => {
      const end = Math.min(blob.size, at + length);
      last = blob.slice(at, end);
      at = end;
      if (scratch === null || scratch.byteLength < last.size) scratch = new ArrayBuffer(Math.max(length, last.size));
      const { piece, buffer } = await readInto(last, scratch);
      scratch = buffer;
      return piece;
    },
    // The slice itself: the browser sends it from the file, nothing of it copied in the page.
    body: () => last,
    close: async () => undefined,
  };
}

/**
 * A Blob's bytes read into `scratch` (a byte stream's BYOB reader) and the buffer to reuse next. A
 * browser's `arrayBuffer()` would hand out a new buffer per piece, and its garbage collector lets
 * hundreds of MiB of them pile up before it frees one; a platform without BYOB reads gets that.
 */
async function readInto(slice: Blob, scratch: ArrayBuffer): Promise<{ piece: Uint8Array; buffer: ArrayBuffer }> {
  let reader: ReadableStreamBYOBReader;
  try {
    reader = slice.stream().getReader({ mode: 'byob' });
  } catch {
    return { piece: new Uint8Array(await slice.arrayBuffer()), buffer: scratch };
  }
  let buffer = scratch;
  let filled = 0;
  try {
    while (filled < slice.size) {
      const r = await reader.read(new Uint8Array(buffer, filled, buffer.byteLength - filled));
      if (r.value !== undefined) {
        // A BYOB read hands the buffer back (the one passed in is detached).
        buffer = r.value.buffer as ArrayBuffer;
        filled += r.value.byteLength;
      }
      if (r.done) break;
    }
  } finally {
    reader.releaseLock();
  }
  return { piece: new Uint8Array(buffer, 0, filled), buffer };
}

/** Cuts the chunks a stream or iterator hands out (of any size) into pieces of the length asked for. */
function pulledReader(next: () => Promise<Uint8Array | null>, cancel: () => Promise<void>): SourceReader {
  let held: Uint8Array | null = null;
  let ended = false;
  let scratch: Uint8Array | null = null;
  return {
    size: null,
    body: copiedBody,
    read: async (length) => {
      // Only what this piece needs is pulled; a source chunk longer than it is kept for the next.
      let piece: Uint8Array | null = null;
      let filled = 0;
      while (filled < length) {
        if (held === null || held.length === 0) {
          if (ended) break;
          const chunk = await next();
          if (chunk === null) {
            ended = true;
            break;
          }
          if (!(chunk instanceof Uint8Array)) throw new TypeError('an upload source must yield Uint8Array chunks');
          held = chunk;
          continue;
        }
        const take = Math.min(length - filled, held.length);
        if (piece === null && take === length) {
          piece = held.subarray(0, take);
        } else {
          if (scratch === null || scratch.length < length) scratch = new Uint8Array(length);
          piece ??= scratch.subarray(0, length);
          piece.set(held.subarray(0, take), filled);
        }
        held = held.subarray(take);
        filled += take;
      }
      if (piece === null) return new Uint8Array(0);
      return filled === piece.length ? piece : piece.subarray(0, filled);
    },
    close: cancel,
  };
}

function isReadableStream(x: unknown): x is ReadableStream<Uint8Array> {
  return typeof x === 'object' && x !== null && typeof (x as ReadableStream).getReader === 'function';
}

function isAsyncIterable(x: unknown): x is AsyncIterable<Uint8Array> {
  return (
    typeof x === 'object' && x !== null && typeof (x as AsyncIterable<Uint8Array>)[Symbol.asyncIterator] === 'function'
  );
}
