import { connect, type Socket } from 'node:net';

/**
 * A hand-driven HTTP/1.1 connection, for clients that misbehave on purpose: headers or a body sent
 * a byte at a time, or not at all. Records what came back and when the server hung up.
 */
export interface RawConnection {
  readonly socket: Socket;
  write(text: string | Uint8Array): void;
  /** Everything the server sent so far. */
  received(): string;
  /** Milliseconds from `openRaw` until the server closed the connection (resolves then). */
  readonly closed: Promise<number>;
  isClosed(): boolean;
  /** Sends `text` one byte every `everyMs` until done or the connection closes. */
  trickle(text: string, everyMs: number): Promise<void>;
  destroy(): void;
}

export async function openRaw(port: number): Promise<RawConnection> {
  const started = Date.now();
  const socket = connect({ host: '127.0.0.1', port });
  let data = '';
  let done = false;
  socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
  socket.on('error', () => undefined); // a reset is one way of being cut off
  const closed = new Promise<number>((resolve) =>
    socket.once('close', () => {
      done = true;
      resolve(Date.now() - started);
    }),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  const write = (text: string | Uint8Array) => {
    if (!done && socket.writable) socket.write(text);
  };
  return {
    socket,
    write,
    received: () => data,
    closed,
    isClosed: () => done,
    trickle: async (text, everyMs) => {
      for (const ch of text) {
        if (done) return;
        write(ch);
        await new Promise((r) => setTimeout(r, everyMs));
      }
    },
    destroy: () => socket.destroy(),
  };
}

/** The head of a request with a JSON or octet-stream body of `length` bytes, ready to send. */
export function requestHead(method: string, path: string, headers: Record<string, string | number>): string {
  const lines = [
    `${method} ${path} HTTP/1.1`,
    'host: 127.0.0.1',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}
