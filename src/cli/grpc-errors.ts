/**
 * Plain-words explanations of the gRPC connection failures a user causes by pointing
 * `auris stream` at the wrong port: grpc-js reports them as "No connection established. Last
 * error: Protocol error" (an HTTP/1 server, e.g. the REST port) or "... ECONNREFUSED".
 */
import { errorCode } from '../errors';
import { StreamClientError } from '../client/stream';
import { DEFAULT_GRPC_PORT } from './util';

/** `e` with a message that says what is wrong and what to do, when it is a connection failure we recognise; else `e`. */
export function explainGrpcError(e: unknown, address: string): unknown {
  if (errorCode(e) !== 'UNAVAILABLE' || !(e instanceof Error)) return e;
  if (/Protocol error/i.test(e.message)) {
    return new StreamClientError(
      'UNAVAILABLE',
      `${address} does not answer gRPC (is it the REST port?). auris serve takes gRPC streams on its GRPC_PORT ` +
        `(default ${DEFAULT_GRPC_PORT}): give that with --grpc host:port, or stream over the REST port with --transport ws --url http://host:port. (${e.message})`,
    );
  }
  if (/ECONNREFUSED/.test(e.message)) {
    return new StreamClientError(
      'UNAVAILABLE',
      `nothing listens on ${address}: is auris serve running, and is this its gRPC port (GRPC_PORT, default ${DEFAULT_GRPC_PORT})? (${e.message})`,
    );
  }
  return e;
}
