/**
 * The gRPC port's own TCP listener, in front of grpc-js (which gets each admitted socket through
 * its connection injector). grpc-js alone keeps every accepted connection open for ever, so a
 * client that opens connections and sends nothing could use up the process's file descriptors
 * and take the REST port down with it. Here, per connection:
 *
 *   - a cap per client address (IPv6: per /64) and in total: beyond either, the socket is closed
 *     at once. When the total is full, the oldest connection that has not yet sent the HTTP/2
 *     preface is closed to make room, so silent connections from many addresses cannot keep a
 *     real client out either;
 *   - a handshake timeout: a connection that has not sent the 24-byte HTTP/2 client preface
 *     within `handshakeTimeoutMs` is closed (REST answers a silent connection with 408 after
 *     10 s likewise). Idle connections after the handshake are closed by grpc-js
 *     (`grpc.max_connection_idle_ms`, src/grpc/server.ts).
 *
 * The total cap defaults to a quarter of the descriptor limit (src/config.ts), leaving the rest
 * to REST, job files and the models.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { clientKey } from '../http/auth-throttle';

/** Bytes of the HTTP/2 client connection preface ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"). */
const PREFACE_BYTES = 24;

export interface ConnectionLimits {
  /** Open connections in total (0: no cap). */
  maxConnections: number;
  /** Open connections per client address (IPv6: per /64; 0: no cap). */
  maxConnectionsPerAddress: number;
  /** A connection must send the HTTP/2 preface within this, ms. */
  handshakeTimeoutMs: number;
}

export interface ConnectionGateLog {
  debug?(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface ConnectionStats {
  open: number;
  refused: number;
  /** Closed for not sending the HTTP/2 preface in time (or evicted to make room while silent). */
  silentClosed: number;
}

interface Tracked {
  socket: Socket;
  key: string;
  timer: NodeJS.Timeout;
  released: boolean;
}

export class GrpcConnectionGate {
  private readonly listener: Server;
  private readonly perAddress = new Map<string, number>();
  /** Connections that have not sent the preface yet, oldest first (Set keeps insertion order). */
  private readonly pending = new Set<Tracked>();
  private open = 0;
  private refused = 0;
  private silentClosed = 0;

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly inject: (socket: Socket) => void,
    private readonly log: ConnectionGateLog,
  ) {
    this.listener = createServer((socket) => this.admit(socket));
    // An accept() that fails (EMFILE) must not end the process; libuv keeps listening.
    this.listener.on('error', (err) => this.log.warn({ err }, 'gRPC listener error'));
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.listener.once('error', onError);
      this.listener.listen({ host, port }, () => {
        this.listener.off('error', onError);
        const addr = this.listener.address();
        resolve(typeof addr === 'object' && addr ? addr.port : port);
      });
    });
  }

  /** Stops accepting; open connections are grpc-js's to close (its shutdown), so this does not wait for them. */
  close(): void {
    for (const t of this.pending) clearTimeout(t.timer);
    if (this.listener.listening) this.listener.close();
  }

  stats(): ConnectionStats {
    return { open: this.open, refused: this.refused, silentClosed: this.silentClosed };
  }

  private admit(socket: Socket): void {
    socket.on('error', (err) => this.log.debug?.({ err }, 'gRPC connection error'));
    const address = socket.remoteAddress;
    if (address === undefined) return void socket.destroy(); // already gone
    const key = clientKey(address);
    const { maxConnections, maxConnectionsPerAddress } = this.limits;
    if (maxConnectionsPerAddress > 0 && (this.perAddress.get(key) ?? 0) >= maxConnectionsPerAddress) return this.refuse(socket, key, 'per-address');
    if (maxConnections > 0 && this.open >= maxConnections && !this.evictSilent()) return this.refuse(socket, key, 'total');
    this.open++;
    this.perAddress.set(key, (this.perAddress.get(key) ?? 0) + 1);
    const tracked: Tracked = { socket, key, released: false, timer: setTimeout(() => this.checkHandshake(tracked), this.limits.handshakeTimeoutMs) };
    tracked.timer.unref();
    this.pending.add(tracked);
    socket.once('close', () => this.release(tracked));
    this.inject(socket);
  }

  private refuse(socket: Socket, key: string, cap: string): void {
    this.refused++;
    this.log.debug?.({ client: key, cap }, 'gRPC connection refused: connection cap reached');
    socket.destroy();
  }

  /** Once the handshake time is up: closed if the preface has not arrived, else no longer pending. */
  private checkHandshake(t: Tracked): void {
    this.pending.delete(t);
    // bytesRead counts at the handle, also while http2 consumes the socket natively.
    if (t.socket.bytesRead >= PREFACE_BYTES) return;
    this.silentClosed++;
    this.log.debug?.({ client: t.key }, 'gRPC connection closed: no HTTP/2 preface in time');
    t.socket.destroy();
  }

  /** Closes the oldest connection that is still silent (no preface yet); false when there is none. */
  private evictSilent(): boolean {
    for (const t of this.pending) {
      if (t.socket.bytesRead >= PREFACE_BYTES) continue;
      this.pending.delete(t);
      clearTimeout(t.timer);
      this.silentClosed++;
      this.log.debug?.({ client: t.key }, 'gRPC connection closed: silent, the connection cap is reached');
      t.socket.destroy();
      this.release(t); // counted free now, not when 'close' arrives
      return true;
    }
    return false;
  }

  private release(t: Tracked): void {
    if (t.released) return;
    t.released = true;
    clearTimeout(t.timer);
    this.pending.delete(t);
    this.open--;
    const n = (this.perAddress.get(t.key) ?? 1) - 1;
    if (n <= 0) this.perAddress.delete(t.key);
    else this.perAddress.set(t.key, n);
  }
}
