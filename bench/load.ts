import { connect, type Socket } from 'node:net';

/**
 * The bench's load generator: closed-loop HTTP/1.1 keep-alive clients over plain sockets, each
 * sending its next request when the previous answer is whole.
 *
 * Why not autocannon, which the bench used before: on this 2-core VM the load generator shares the
 * machine with the server, and every microsecond it spends per request is one the server under
 * test cannot have, most of all when two server workers need both cores. autocannon parses every
 * answer with http-parser-js, in JavaScript, and keeps per-request bookkeeping this bench does not
 * read; `npm run bench -- --loadgen` measures the CPU each spends per answer on the bare route
 * (docs/capacity.md has the figures). Requests are encoded once up front; an answer is read only
 * as far as its status, its length and its end. BENCH_LOADGEN=autocannon runs any mode on it.
 */

export interface LoadRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Called before each send of this request; returns the request to send (a new body, say). */
  setupRequest?: (req: { method: string; path: string; headers: Record<string, string>; body?: string }) => {
    method: string;
    path: string;
    headers: Record<string, string>;
    body?: string;
  };
}

export interface LoadOptions {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Requests each client cycles through, in order (each client starts at the next one). */
  requests?: LoadRequest[];
  connections: number;
  seconds: number;
  /**
   * Local addresses the connections bind in turn (loopback 127.0.0.2 and up are distinct peers to
   * the server): a flood from many client addresses. Unset, the system picks.
   */
  localAddresses?: string[];
}

export interface LoadResult {
  /** Answers per second over the run. */
  rps: number;
  /** Latency percentiles in milliseconds. */
  p50: number;
  p99: number;
  /** Connection errors and timeouts. */
  errors: number;
  non2xx: number;
  ok: number;
  /** Seconds the run lasted. */
  duration: number;
  statuses: Record<string, number>;
}

interface Prepared {
  /** The encoded request, or null when it is built anew for each send. */
  bytes: Buffer | null;
  template: LoadRequest & { method: string; path: string; headers: Record<string, string> };
}

function encode(
  host: string,
  req: { method: string; path: string; headers: Record<string, string>; body?: string },
): Buffer {
  const body = req.body === undefined ? null : Buffer.from(req.body);
  let head = `${req.method} ${req.path} HTTP/1.1\r\nhost: ${host}\r\n`;
  for (const [name, value] of Object.entries(req.headers)) head += `${name}: ${value}\r\n`;
  if (body !== null) head += `content-length: ${body.length}\r\n`;
  head += '\r\n';
  return body === null ? Buffer.from(head, 'latin1') : Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

const CRLFCRLF = Buffer.from('\r\n\r\n');

/**
 * Where the answer at the start of `buf` ends and its status, or null while it is not whole.
 * Handles `content-length` and `chunked` answers, which is all a Hono server sends.
 */
export function answerEnd(buf: Buffer): { end: number; status: number } | null {
  const headEnd = buf.indexOf(CRLFCRLF);
  if (headEnd < 0) return null;
  const head = buf.toString('latin1', 0, headEnd).toLowerCase();
  const status = Number(head.slice(9, 12));
  const bodyStart = headEnd + 4;
  const length = /\r\ncontent-length: *(\d+)/.exec(head);
  if (length) {
    const end = bodyStart + Number(length[1]);
    return end <= buf.length ? { end, status } : null;
  }
  if (/\r\ntransfer-encoding: *chunked/.test(head)) {
    let at = bodyStart;
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', at, 'latin1');
      if (lineEnd < 0) return null;
      const size = parseInt(buf.toString('latin1', at, lineEnd), 16);
      at = lineEnd + 2 + size + 2;
      if (at > buf.length) return null;
      if (size === 0) return { end: at, status };
    }
  }
  // 204, 304 and HEAD answers carry no body.
  return { end: bodyStart, status };
}

export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const url = new URL(opts.url);
  const host = url.host;
  const port = Number(url.port || 80);
  const base: Required<Pick<LoadRequest, 'method' | 'path' | 'headers'>> & { body?: string } = {
    method: opts.method ?? 'GET',
    path: url.pathname + url.search,
    headers: opts.headers ?? {},
    ...(opts.body !== undefined ? { body: opts.body } : {}),
  };
  const list: LoadRequest[] = opts.requests && opts.requests.length > 0 ? opts.requests : [{}];
  const prepared: Prepared[] = list.map((r) => {
    const template = {
      ...base,
      ...r,
      method: r.method ?? base.method,
      path: r.path ?? base.path,
      headers: { ...base.headers, ...(r.headers ?? {}) },
    };
    if (r.body === undefined && base.body !== undefined) template.body = base.body;
    return { bytes: r.setupRequest ? null : encode(host, template), template };
  });

  const statuses: Record<string, number> = {};
  const latencies: number[] = [];
  let errors = 0;
  let ok = 0;
  let non2xx = 0;
  let stopping = false;
  const started = performance.now();
  const clients: Promise<void>[] = [];
  const sockets = new Set<Socket>();
  let nextStart = 0;

  let nextLocal = 0;
  const client = (startAt: number) =>
    new Promise<void>((done) => {
      const localAddress =
        opts.localAddresses && opts.localAddresses.length > 0
          ? opts.localAddresses[nextLocal++ % opts.localAddresses.length]
          : undefined;
      let index = startAt;
      let socket: Socket;
      let pending: Buffer = Buffer.alloc(0);
      let sentAt = 0;
      let inFlight = false;
      const send = () => {
        if (stopping) {
          socket.destroy();
          done();
          return;
        }
        const p = prepared[index]!;
        index = (index + 1) % prepared.length;
        const bytes =
          p.bytes ?? encode(host, p.template.setupRequest!({ ...p.template, headers: { ...p.template.headers } }));
        sentAt = performance.now();
        inFlight = true;
        socket.write(bytes);
      };
      const open = () => {
        pending = Buffer.alloc(0);
        socket = connect({
          port,
          host: url.hostname,
          noDelay: true,
          ...(localAddress !== undefined ? { localAddress } : {}),
        });
        sockets.add(socket);
        socket.on('connect', send);
        socket.on('data', (chunk: Buffer) => {
          pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
          const answer = answerEnd(pending);
          if (answer === null) return;
          pending = pending.subarray(answer.end);
          inFlight = false;
          latencies.push(performance.now() - sentAt);
          statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
          if (answer.status >= 200 && answer.status < 300) ok++;
          else non2xx++;
          send();
        });
        socket.on('error', () => {
          /* counted on close */
        });
        socket.on('close', () => {
          sockets.delete(socket);
          if (inFlight && !stopping) errors++;
          inFlight = false;
          if (stopping) return done();
          setImmediate(open);
        });
      };
      open();
    });

  for (let i = 0; i < opts.connections; i++) clients.push(client(nextStart++ % prepared.length));
  await new Promise((r) => setTimeout(r, opts.seconds * 1000));
  stopping = true;
  const duration = (performance.now() - started) / 1000;
  // The figures are those of the run's length; answers still arriving are not counted.
  const result = { rps: (ok + non2xx) / duration, errors, non2xx, ok, duration, statuses: { ...statuses } };
  const sorted = Float64Array.from(latencies).sort();
  const at = (q: number) =>
    sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  // A client stops at its next answer; one still waiting after a second is cut off.
  await Promise.race([Promise.all(clients), new Promise((r) => setTimeout(r, 1000))]);
  for (const socket of sockets) socket.destroy();
  return { ...result, p50: at(0.5), p99: at(0.99) };
}
