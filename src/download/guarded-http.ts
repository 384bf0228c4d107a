/**
 * One HTTP(S) request to a URL whose host passed the SSRF check (ssrf.ts), made over a
 * connection to the very address that was checked: the host name is resolved once (by the
 * injectable resolver), every address is checked, and the injectable connector opens the
 * socket to that IP (TLS with the URL's host name for SNI and certificate checks). Node's
 * own DNS lookup is never used, so a second DNS answer cannot rebind the host.
 * Redirects are not followed here; the caller checks each hop again.
 */
import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, TLSSocket } from 'node:tls';
import { type AddressPolicy, checkUrlForm, type Resolver, resolveChecked, systemResolver } from './ssrf';

/** Where to connect: an address that passed the check, and the URL's host for SNI / Host. */
export interface ConnectTarget {
  address: string;
  family: 4 | 6;
  port: number;
  /** The URL's host name (without brackets), for TLS SNI and certificate verification. */
  hostname: string;
  tls: boolean;
}

/** Opens the socket to a checked address. Injectable (tests: a connector that refuses anything but loopback). */
export type Connector = (target: ConnectTarget) => Socket;

export const defaultConnector: Connector = (t) =>
  t.tls
    ? tlsConnect({ host: t.address, port: t.port, servername: isIP(t.hostname) ? undefined : t.hostname, ALPNProtocols: ['http/1.1'] })
    : netConnect({ host: t.address, port: t.port });

export interface UrlGuard {
  policy: AddressPolicy;
  resolver?: Resolver;
  connector?: Connector;
}

export interface GuardedRequestOptions {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string | Buffer;
  signal?: AbortSignal;
  /** Time allowed to open the connection (TCP + TLS handshake), ms. */
  connectTimeoutMs: number;
}

export class ConnectTimeoutError extends Error {
  override name = 'ConnectTimeoutError';
}

/**
 * Sends one request after the SSRF check; resolves with the response (headers read, body not
 * yet consumed). Throws AurisError URL_NOT_ALLOWED / DOWNLOAD_FAILED from the check,
 * ConnectTimeoutError, or the socket's error.
 */
export async function guardedRequest(u: URL, guard: UrlGuard, opts: GuardedRequestOptions): Promise<IncomingMessage> {
  const addresses = await resolveChecked(u, guard.policy, guard.resolver ?? systemResolver);
  opts.signal?.throwIfAborted();
  // Every address passed the check; try them in turn (IPv4 first) while connecting fails.
  const candidates = [...addresses.filter((a) => a.family === 4), ...addresses.filter((a) => a.family === 6)].slice(0, MAX_ADDRESSES);
  const tls = u.protocol === 'https:';
  for (let i = 0; ; i++) {
    const a = candidates[i]!;
    const target: ConnectTarget = {
      address: a.address,
      family: a.family,
      port: u.port ? Number(u.port) : tls ? 443 : 80,
      hostname: u.hostname.replace(/^\[|\]$/g, ''),
      tls,
    };
    try {
      return await attempt(u, target, guard.connector ?? defaultConnector, opts);
    } catch (err) {
      const retry = connectFailures.has(err as object) && i + 1 < candidates.length && !opts.signal?.aborted; // nothing reached the peer yet
      if (!retry) throw err;
    }
  }
}

/** At most this many of a host's addresses are tried. */
const MAX_ADDRESSES = 4;
/** Errors raised before the connection was up (another address may work). */
const connectFailures = new WeakSet<object>();

function attempt(u: URL, target: ConnectTarget, connector: Connector, opts: GuardedRequestOptions): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    let req: ClientRequest;
    let connected = false;
    let connectTimer: NodeJS.Timeout | null = null;
    const clear = (): void => {
      if (connectTimer) clearTimeout(connectTimer);
      connectTimer = null;
    };
    try {
      req = request({
        method: opts.method,
        path: `${u.pathname}${u.search}`,
        headers: { host: u.host, ...opts.headers },
        signal: opts.signal,
        createConnection: () => {
          const socket = connector(target);
          const ready = socket instanceof TLSSocket ? 'secureConnect' : 'connect';
          if (socket.connecting || socket instanceof TLSSocket) {
            connectTimer = setTimeout(() => {
              req.destroy(new ConnectTimeoutError(`connecting to ${u.host} (${target.address}) took longer than ${opts.connectTimeoutMs} ms`));
            }, opts.connectTimeoutMs);
            socket.once(ready, () => {
              connected = true;
              clear();
            });
            socket.once('close', clear);
          } else connected = true;
          return socket;
        },
      });
    } catch (err) {
      reject(err);
      return;
    }
    req.once('response', (res) => {
      clear();
      resolve(res);
    });
    req.once('error', (err) => {
      clear();
      if (!connected && !(err instanceof Error && err.name === 'AbortError')) connectFailures.add(err);
      reject(err);
    });
    req.end(opts.body);
  });
}

/** Reads and drops a response body (bounded), so the socket closes cleanly. */
export function discard(res: IncomingMessage): void {
  res.resume();
  res.once('error', () => undefined);
}

/**
 * A fetch-like POST/GET through the SSRF guard (no redirects followed), for callbacks:
 * resolves with the status and a body reader; the body is capped at `maxBodyBytes`.
 */
export async function guardedFetch(
  url: string,
  init: { method: 'GET' | 'POST'; body?: string; headers: Record<string, string>; signal?: AbortSignal },
  guard: UrlGuard,
  connectTimeoutMs: number,
  maxBodyBytes = 1024 * 1024,
): Promise<{ status: number; arrayBuffer(): Promise<ArrayBuffer> }> {
  const u = checkUrlForm(url);
  const headers = { ...init.headers };
  if (init.body !== undefined) headers['content-length'] = String(Buffer.byteLength(init.body));
  const res = await guardedRequest(u, guard, { method: init.method, headers, body: init.body, signal: init.signal, connectTimeoutMs });
  return {
    status: res.statusCode ?? 0,
    arrayBuffer: () =>
      new Promise<ArrayBuffer>((resolve, reject) => {
        const parts: Buffer[] = [];
        let n = 0;
        res.on('data', (c: Buffer) => {
          n += c.length;
          if (n > maxBodyBytes) res.destroy();
          else parts.push(c);
        });
        res.once('end', () => resolve(new Uint8Array(Buffer.concat(parts)).buffer));
        res.once('error', reject);
        res.once('close', () => {
          if (!res.complete) reject(new Error('response body closed early'));
        });
      }),
  };
}

/** True for the SSRF refusal (URL_NOT_ALLOWED): a permanent error, not worth a retry. */
export function isUrlNotAllowed(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'URL_NOT_ALLOWED';
}
