import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { HttpProblem, problemBody } from './problem.js';

/** The parser's refusals that have a status of their own; any other is malformed input (400). */
function problemOf(error: NodeJS.ErrnoException): HttpProblem {
  if (error.code === 'HPE_HEADER_OVERFLOW')
    return new HttpProblem('error.request.headers_too_large', 'The request headers are larger than this server reads.');
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new HttpProblem('error.request.timeout', 'The request did not arrive in time.');
  return new HttpProblem('error.request.invalid', 'The request is not well-formed HTTP.');
}

/**
 * Requests Node's HTTP parser refuses before any handler sees them (a malformed request line or
 * Content-Length, both Content-Length and Transfer-Encoding, headers too large or too slow) are
 * answered like every other refusal (spec §2.6, §2.7: problem+json with its code,
 * whatever refused it; the protocol headers on every response), not with Node's bare status line.
 * The connection is closed behind the answer: after a framing error the rest of its bytes cannot
 * be trusted to start a request.
 */
export function answerClientErrors(server: Server, protocolHeaders: () => Record<string, string>): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Nothing to answer on a connection the client dropped, or one whose response has begun.
    const started =
      (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (error.code === 'ECONNRESET' || !socket.writable || started) {
      socket.destroy();
      return;
    }
    const problem = problemBody(problemOf(error));
    const body = Buffer.from(JSON.stringify(problem));
    const headers = {
      ...protocolHeaders(),
      'content-type': 'application/problem+json',
      'content-length': String(body.length),
      connection: 'close',
    };
    const head = `HTTP/1.1 ${String(problem.status)} ${String(problem.title)}\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n')}\r\n\r\n`;
    socket.end(Buffer.concat([Buffer.from(head, 'latin1'), body]));
  });
}
