/**
 * Helpers of the download tests.
 *
 * Network safety: every Downloader / server in these tests gets `guardedNet()`: a resolver
 * that answers from a fixed table (never DNS) and a connector that connects only to
 * 127.0.0.0/8 or ::1. Any other address is recorded as a violation and refused without a
 * connection, so even a broken SSRF check cannot reach another machine; tests assert that
 * no violation happened where the check should have refused first.
 */
import { createPublicKey, createVerify, verify as cryptoVerify } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { ConnectTarget, Connector } from '../../src/download/guarded-http';
import { parseIp, type Resolver } from '../../src/download/ssrf';

export { tempDir } from '../http/helpers';

export function isLoopback(address: string): boolean {
  const ip = parseIp(address);
  if (!ip) return false;
  if (ip.family === 4) return ip.bytes[0] === 127;
  return ip.bytes.slice(0, 15).every((b) => b === 0) && ip.bytes[15] === 1;
}

export interface GuardedNet {
  resolver: Resolver;
  connector: Connector;
  /** Addresses the code under test tried to connect to that are not loopback. */
  violations: ConnectTarget[];
  /** Every connection made (loopback only). */
  connections: ConnectTarget[];
  /** Host names looked up, in order. */
  lookups: string[];
}

/** A fake resolver (table; unknown names fail with ENOTFOUND) and a loopback-only connector. */
export function guardedNet(table: Record<string, string[]> = {}): GuardedNet {
  const net: GuardedNet = {
    violations: [],
    connections: [],
    lookups: [],
    resolver: async (hostname) => {
      net.lookups.push(hostname);
      const addrs = table[hostname.toLowerCase()];
      if (!addrs) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }) as const);
    },
    connector: (t): Socket => {
      if (!isLoopback(t.address)) {
        net.violations.push(t);
        throw new Error(`test connector: refusing to connect to ${t.address} (only loopback is allowed in tests)`);
      }
      net.connections.push(t);
      if (t.tls) throw new Error('test connector: no TLS in these tests');
      return connect({ host: t.address, port: t.port });
    },
  };
  return net;
}

export interface TestHost {
  server: Server;
  url: string;
  port: number;
  /** Bytes of response bodies written, per path. */
  served: Map<string, number>;
  requests: Array<{ path: string; headers: IncomingMessage['headers'] }>;
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1:0 that counts the body bytes it writes. */
export async function startHost(handler: (req: IncomingMessage, res: ServerResponse, host: TestHost) => void | Promise<void>): Promise<TestHost> {
  const host = { served: new Map<string, number>(), requests: [] } as unknown as TestHost;
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    host.requests.push({ path, headers: req.headers });
    const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (chunk) host.served.set(path, (host.served.get(path) ?? 0) + (chunk as Buffer).length);
      return write(chunk, ...rest);
    }) as typeof res.write;
    Promise.resolve(handler(req, res, host)).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
      else res.destroy();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  Object.assign(host, {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  });
  return host;
}

/** A 44-byte PCM WAV header declaring `seconds` of audio. */
export function wavHeader(seconds: number, rate: number, channels: number, bits: 8 | 16): Buffer {
  const block = channels * (bits / 8);
  const dataBytes = Math.round(seconds * rate) * block;
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'latin1');
  h.writeUInt32LE(Math.min(0xffffffff, 36 + dataBytes), 4);
  h.write('WAVE', 8, 'latin1');
  h.write('fmt ', 12, 'latin1');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * block, 28);
  h.writeUInt16LE(block, 32);
  h.writeUInt16LE(bits, 34);
  h.write('data', 36, 'latin1');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

/** A whole WAV of digital silence (small files only). */
export function silenceWav(seconds: number, rate = 16000, channels = 1): Buffer {
  const h = wavHeader(seconds, rate, channels, 16);
  return Buffer.concat([h, Buffer.alloc(h.readUInt32LE(40))]);
}

/**
 * Writes `total` bytes (a header, then zeros) in 64 KiB chunks with backpressure; stops when
 * the client goes away. Returns how many bytes were written.
 */
export async function streamBody(res: ServerResponse, header: Buffer, total: number): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024);
  let sent = 0;
  const send = (b: Buffer): Promise<boolean> =>
    new Promise((resolve) => {
      if (res.destroyed) return resolve(false);
      if (res.write(b)) return resolve(true);
      const done = (ok: boolean) => () => {
        res.off('drain', onDrain);
        res.off('close', onClose);
        resolve(ok);
      };
      const onDrain = done(true);
      const onClose = done(false);
      res.once('drain', onDrain);
      res.once('close', onClose);
    });
  if (!(await send(header))) return sent;
  sent += header.length;
  while (sent < total) {
    const n = Math.min(chunk.length, total - sent);
    if (!(await send(n === chunk.length ? chunk : chunk.subarray(0, n)))) return sent;
    sent += n;
  }
  res.end();
  return sent;
}

/**
 * Independent check of a token, with node:crypto only (no jose): ECDSA P-521 / SHA-512 over
 * "header.payload" against the published base64 DER (SPKI) key, raw r||s signature.
 * Returns the decoded header and claims, or throws.
 */
export function verifyWithNodeCrypto(token: string, derBase64: string): { header: Record<string, unknown>; claims: Record<string, unknown> } {
  const parts = token.split('.');
  if (parts.length !== 3) throw new Error('not a compact JWS');
  const [h, p, s] = parts as [string, string, string];
  const key = createPublicKey({ key: Buffer.from(derBase64, 'base64'), format: 'der', type: 'spki' });
  if (key.asymmetricKeyDetails?.namedCurve !== 'secp521r1') throw new Error('published key is not P-521');
  const sig = Buffer.from(s, 'base64url');
  if (sig.length !== 132) throw new Error(`ES512 signature must be 132 bytes, got ${sig.length}`);
  const ok = cryptoVerify('sha512', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }, sig);
  if (!ok) throw new Error('node:crypto: signature does not verify');
  // The same with the streaming API and a DER-converted signature, to be sure of the encoding.
  const v = createVerify('SHA512');
  v.update(`${h}.${p}`);
  if (!v.verify({ key, dsaEncoding: 'ieee-p1363' }, sig)) throw new Error('node:crypto (Verify): signature does not verify');
  return {
    header: JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as Record<string, unknown>,
    claims: JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>,
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
