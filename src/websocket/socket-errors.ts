/**
 * What happens to a WebSocket whose connection reports an error (@fastify/websocket's
 * errorHandler). A protocol error found by the ws library (a frame over maxPayload, a bad
 * opcode, invalid UTF-8: codes WS_ERR_*) has already made it send the close frame with the
 * matching code (1009 for a frame over 4 MiB, docs/streaming.md); terminating the socket then
 * could drop that frame, and the client saw 1006. ws closes such a socket itself once the
 * close handshake ends (or its own timeout passes). Anything else (a reset) ends the socket.
 */
export interface ClosableSocket {
  terminate(): void;
}

export interface DebugLog {
  debug?(obj: object, msg: string): void;
}

export function isWsProtocolError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('WS_ERR_');
}

/** The errorHandler: a client's connection problem is no server error (debug log). */
export function websocketErrorHandler(log: DebugLog): (err: Error, socket: ClosableSocket) => void {
  return (err, socket) => {
    log.debug?.({ err }, 'websocket error');
    if (!isWsProtocolError(err)) socket.terminate();
  };
}
