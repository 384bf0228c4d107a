/**
 * The NATS connection of one process, shared by the four JetStream backends: reconnects
 * forever, tracks whether the server is reachable, and turns "unreachable" into a fast
 * BackendUnavailableError instead of a request that hangs until its timeout.
 */
import { connect, type JetStreamClient, type JetStreamManager, type NatsConnection, type NatsError } from 'nats';
import { BackendUnavailableError } from '../types';

export interface NatsLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentLogger: NatsLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export interface ConnectOptions {
  /** One URL or several (comma-separated or an array): the seed servers of a cluster. */
  servers: string | string[];
  /** Client name shown in the server's monitoring. */
  name?: string;
  /** Wait between reconnect attempts, ms. */
  reconnectWaitMs?: number;
  /** Timeout of one JetStream API request, ms. */
  requestTimeoutMs?: number;
  log?: NatsLogger;
}

/** Error codes of the client that mean "the server cannot be reached right now". */
const UNAVAILABLE_CODES = new Set(['TIMEOUT', '503', 'DISCONNECT', 'CONNECTION_CLOSED', 'CONNECTION_DRAINING', 'CONNECTION_REFUSED', 'CONNECTION_TIMEOUT']);
/** JetStream API error codes meaning the same: not enough resources / not ready / no quorum. */
const UNAVAILABLE_API_CODES = new Set([
  10008 /* JetStream system temporarily unavailable */,
  10023 /* insufficient resources */,
  10028 /* insufficient memory resources */,
  10047 /* insufficient storage resources */,
  10076 /* JetStream not enabled (yet) */,
  10077 /* storing a message failed */,
  10118 /* stream is offline */,
  10119 /* consumer is offline */,
]);

export class NatsConn {
  private connected = true;
  private waiters: Array<() => void> = [];
  private closing = false;

  private constructor(
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    private readonly log: NatsLogger,
  ) {}

  static async open(opts: ConnectOptions): Promise<NatsConn> {
    const log = opts.log ?? silentLogger;
    const servers = (Array.isArray(opts.servers) ? opts.servers : opts.servers.split(','))
      .map((s) => s.trim())
      .filter((s) => s !== '');
    const timeout = opts.requestTimeoutMs ?? 5000;
    const nc = await connect({
      servers,
      name: opts.name ?? 'auris',
      maxReconnectAttempts: -1,
      reconnectTimeWait: opts.reconnectWaitMs ?? 1000,
      waitOnFirstConnect: true,
      // A silent network failure (no TCP reset) is noticed after ~30 s instead of minutes.
      pingInterval: 10_000,
      maxPingOut: 3,
      timeout,
    });
    // No API check here: a cluster may still be electing its leaders (the setup retries).
    const jsm = await nc.jetstreamManager({ timeout, checkAPI: false });
    const js = nc.jetstream({ timeout });
    const conn = new NatsConn(nc, js, jsm, log);
    conn.watchStatus();
    log.info({ server: nc.getServer() }, 'connected to NATS');
    return conn;
  }

  private watchStatus(): void {
    void (async () => {
      for await (const s of this.nc.status()) {
        if (s.type === 'disconnect') {
          if (this.connected) this.log.warn({ server: s.data }, 'NATS connection lost; reconnecting');
          this.connected = false;
        } else if (s.type === 'reconnect') {
          this.connected = true;
          this.log.info({ server: s.data }, 'NATS connection restored');
          for (const w of this.waiters.splice(0)) w();
          for (const fn of this.onReconnect) fn();
        }
      }
    })().catch(() => undefined);
  }

  /** Called after every reconnect (e.g. to restart watchers). */
  readonly onReconnect: Array<() => void> = [];

  get isConnected(): boolean {
    return this.connected && !this.nc.isClosed() && !this.closing;
  }

  /** Throws BackendUnavailableError at once while the server is unreachable. */
  check(): void {
    if (this.closing || this.nc.isClosed()) throw new BackendUnavailableError('the NATS connection is closed');
    if (!this.connected) throw new BackendUnavailableError('NATS is unreachable; reconnecting');
  }

  /** Resolves once connected (at once if connected now) or when `signal` aborts. */
  waitConnected(signal?: AbortSignal): Promise<void> {
    if (this.isConnected || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        signal?.removeEventListener('abort', done);
        const i = this.waiters.indexOf(done);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve();
      };
      signal?.addEventListener('abort', done, { once: true });
      this.waiters.push(done);
    });
  }

  /** Runs `fn` when connected; errors that mean "unreachable" become BackendUnavailableError. */
  async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    this.check();
    try {
      return await fn();
    } catch (err) {
      throw mapError(err, what);
    }
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const w of this.waiters.splice(0)) w();
    if (this.nc.isClosed()) return;
    // drain() flushes pending acks; it can hang while disconnected, so close() after a bound.
    if (this.connected) {
      await Promise.race([this.nc.drain().catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
    }
    if (!this.nc.isClosed()) await this.nc.close().catch(() => undefined);
  }
}

/** The JetStream API error code of an error, if it is one. */
export function apiErrorCode(err: unknown): number | undefined {
  const e = err as NatsError | undefined;
  return e && typeof e === 'object' && e.api_error ? e.api_error.err_code : undefined;
}

export function isUnavailable(err: unknown): boolean {
  if (err instanceof BackendUnavailableError) return true;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
  const api = apiErrorCode(err);
  return api !== undefined && UNAVAILABLE_API_CODES.has(api);
}

export function mapError(err: unknown, what: string): unknown {
  if (err instanceof BackendUnavailableError) return err;
  if (isUnavailable(err)) return new BackendUnavailableError(`NATS unavailable (${what}): ${(err as Error).message}`, 5, { cause: err });
  return err;
}

/** Resolves after `ms`, or early when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Stops `iter` when `signal` aborts (also when it already has); returns the cleanup. */
export function stopOnAbort(iter: { stop(err?: Error): void }, signal: AbortSignal): () => void {
  const onAbort = (): void => void iter.stop();
  if (signal.aborted) {
    onAbort();
    return () => undefined;
  }
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}
