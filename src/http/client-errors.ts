/**
 * Requests Node's HTTP parser refuses before Fastify sees them (malformed request line or
 * headers, a header block over the limit, a request not complete in time) are answered
 * with problem+json too, like every other error (Fastify's default writes its own JSON).
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { PROBLEM_CONTENT_TYPE } from './errors';
import { fromNodeParserError } from './foreign-errors';

/** Fastify's `clientErrorHandler`: one problem+json answer, then the connection is closed. */
export function problemClientErrorHandler(maxHeaderBytes: number): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  return (err, socket) => {
    // A reset connection, or one already gone: nobody to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    if (socket.writable) {
      const apiErr = fromNodeParserError(err, maxHeaderBytes);
      const body = JSON.stringify(apiErr.toProblem());
      socket.write(
        `HTTP/1.1 ${apiErr.status} ${STATUS_CODES[apiErr.status]}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(err);
  };
}
