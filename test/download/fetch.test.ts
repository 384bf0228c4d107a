/**
 * The Downloader against real HTTP hosts on 127.0.0.1 (allowlisted as 127.0.0.1/32 only):
 * signing of every request, redirects (each hop checked again), caps, timeouts, the early
 * duration check, and no second DNS lookup. The test connector refuses every address that
 * is not loopback, and every test asserts it was never even asked for one.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer as createNetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { createServer as createHttpsServer } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { after, afterEach, before, describe, it } from 'node:test';
import { Downloader, type DownloaderOptions, HEAD_BYTES } from '../../src/download/fetch';
import { type KeyRing, loadKeyRing } from '../../src/download/keys';
import { DownloadSigner } from '../../src/download/sign';
import { parseAllowlist } from '../../src/download/ssrf';
import { MemoryJtiStore, verifyDownloadRequest } from '../../src/download/verify';
import { nativeProbe } from '../../src/download/duration';
import type { AurisError } from '../../src/errors';
import { envSkip } from '../env';
import { guardedNet, type GuardedNet, silenceWav, startHost, streamBody, tempDir, type TestHost, verifyWithNodeCrypto, wavHeader } from './helpers';

const MiB = 1024 * 1024;

describe('Downloader', () => {
  const dir = tempDir('auris-fetch-');
  let keys: KeyRing;
  let host: TestHost;
  let net: GuardedNet;
  let n = 0;
  const dest = (): string => join(dir.path, `out-${++n}`);
  const handlers = new Map<string, Parameters<typeof startHost>[0]>();

  before(async () => {
    keys = await loadKeyRing({ dataDir: dir.path });
    host = await startHost((req, res, h) => {
      const path = (req.url ?? '/').split('?')[0]!;
      const handler = handlers.get(path);
      if (!handler) return void res.writeHead(404).end('no');
      return handler(req, res, h);
    });
  });
  after(async () => {
    await host.close();
    dir.cleanup();
  });
  afterEach(() => {
    assert.deepEqual(net.violations, [], 'the connector was never asked for a non-loopback address');
    handlers.clear();
  });

  function downloader(over: Partial<DownloaderOptions> = {}, table: Record<string, string[]> = {}): Downloader {
    net = guardedNet(table);
    return new Downloader({
      signer: new DownloadSigner(keys, 300),
      policy: parseAllowlist(['127.0.0.1']),
      maxBytes: 50 * MiB,
      timeoutMs: 10_000,
      connectTimeoutMs: 2000,
      resolver: net.resolver,
      connector: net.connector,
      probe: null,
      ...over,
    });
  }
  const identity = (url: string) => ({ url, jobId: 'job-1', organizationId: 'org-a', projectId: 'proj-a' });
  const failsWith = async (p: Promise<unknown>, code: string, msg?: RegExp): Promise<AurisError> => {
    let caught: AurisError | undefined;
    await assert.rejects(p, (e: AurisError) => {
      caught = e;
      assert.equal(e.code, code, e.message);
      if (msg) assert.match(e.message, msg);
      return true;
    });
    return caught!;
  };

  it('streams the file to disk (mode 0600) with a signed header that verifies (jose and node:crypto)', async () => {
    const wav = silenceWav(1);
    const seen = new MemoryJtiStore();
    const url = `${host.url}/a.wav?token=x%20y`;
    handlers.set('/a.wav', async (req, res) => {
      await verifyDownloadRequest(req.headers, { jwks: keys.jwks(), organizationId: 'org-a', projectId: 'proj-a', expectedUrl: url, jobId: 'job-1', seenJti: seen });
      verifyWithNodeCrypto(String(req.headers['x-service-request-verification']), keys.verificationKeys()[0]!.public_key);
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': wav.length }).end(wav);
    });
    const d = downloader();
    const out = dest();
    const got = await d.download({ identity: identity(url), destPath: out });
    assert.deepEqual(got, { bytes: wav.length, contentType: 'audio/wav', finalUrl: url, redirects: 0 });
    assert.deepEqual(readFileSync(out), wav);
    assert.equal(statSync(out).mode & 0o777, 0o600);
    // a second download of the same job: a new jti, accepted too
    await d.download({ identity: identity(url), destPath: dest() });
    assert.equal(seen.size, 2);
    assert.equal(host.requests.at(-1)!.headers['accept-encoding'], 'identity');
  });

  it('connects to the address it checked: one lookup per hop, Host header of the URL, no rebinding', async () => {
    handlers.set('/b.wav', (req, res) => void res.writeHead(200).end(`host=${req.headers.host}`));
    let calls = 0;
    const d = downloader();
    // A resolver that would rebind to a private address on a second lookup.
    const rebinding = new Downloader({
      ...d.options,
      resolver: async (name) => {
        net.lookups.push(name);
        return ++calls === 1 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '10.0.0.1', family: 4 }];
      },
    });
    const out = dest();
    await rebinding.download({ identity: identity(`http://files.test:${host.port}/b.wav`), destPath: out });
    assert.equal(readFileSync(out, 'utf8'), `host=files.test:${host.port}`);
    assert.deepEqual(net.lookups, ['files.test']);
    assert.deepEqual(net.connections.map((c) => [c.address, c.hostname]), [['127.0.0.1', 'files.test']]);
  });

  it('every address of a host is checked; when connecting to one fails, the next checked one is tried', async () => {
    handlers.set('/multi.wav', (_req, res) => void res.writeHead(200).end('ok'));
    // 127.0.0.3: nothing listens there on this port (connection refused); 127.0.0.1: the host
    const d = downloader({ policy: parseAllowlist(['127.0.0.0/8']) }, { 'multi.test': ['127.0.0.3', '127.0.0.1'], 'partly.test': ['127.0.0.1', '10.0.0.1'] });
    const out = dest();
    await d.download({ identity: identity(`http://multi.test:${host.port}/multi.wav`), destPath: out });
    assert.equal(readFileSync(out, 'utf8'), 'ok');
    assert.deepEqual(net.connections.map((c) => c.address), ['127.0.0.3', '127.0.0.1']);
    // The caller is not told what the name resolves to; the cause (for the server log) is.
    const refused = await failsWith(d.download({ identity: identity(`http://partly.test:${host.port}/multi.wav`), destPath: dest() }), 'DOWNLOAD_FAILED', /could not be reached/);
    assert.doesNotMatch(refused.message, /10\.0\.0\.1/);
    assert.match((refused.cause as Error).message, /partly\.test resolves to 10\.0\.0\.1/);
  });

  it('follows up to 5 redirects (relative and absolute), each with a fresh token for the original URL; 6 fail', async () => {
    const tokens: string[] = [];
    for (let i = 0; i < 6; i++) {
      handlers.set(`/r${i}`, (req, res) => {
        tokens.push(String(req.headers['x-service-request-verification']));
        res.writeHead(i % 2 ? 302 : 307, { location: i % 2 ? `/r${i + 1}` : `${host.url}/r${i + 1}` }).end();
      });
    }
    handlers.set('/r6', (req, res) => {
      tokens.push(String(req.headers['x-service-request-verification']));
      res.writeHead(200).end('done');
    });
    const d = downloader();
    const got = await d.download({ identity: identity(`${host.url}/r1`), destPath: dest() });
    assert.equal(got.redirects, 5);
    assert.equal(got.finalUrl, `${host.url}/r6`);
    const claims = tokens.map((t) => verifyWithNodeCrypto(t, keys.verificationKeys()[0]!.public_key).claims);
    assert.equal(claims.length, 6);
    assert.equal(new Set(claims.map((c) => c.jti)).size, 6, 'a new jti for every request');
    assert.ok(claims.every((c) => c.url === `${host.url}/r1`), 'url: as given at creation');
    await failsWith(d.download({ identity: identity(`${host.url}/r0`), destPath: dest() }), 'DOWNLOAD_FAILED', /more than 5 redirects/);
  });

  it('a redirect to a private, loopback (not allowlisted), metadata or non-http target is refused before connecting', async () => {
    const targets: Record<string, string> = {
      '/to-10': 'http://10.0.0.1/x.wav',
      '/to-meta': 'http://169.254.169.254/latest/meta-data/',
      '/to-meta6': 'http://[fd00:ec2::254]/',
      '/to-mapped': 'http://[::ffff:192.168.0.10]/x.wav',
      '/to-loopback2': `http://127.0.0.2:${host.port}/a.wav`,
      '/to-localhost': `http://localhost:${host.port}/a.wav`,
      '/to-v6-loopback': `http://[::1]:${host.port}/a.wav`,
      '/to-ftp': 'ftp://example.com/x.wav',
      '/to-file': 'file:///etc/passwd',
    };
    for (const [path, location] of Object.entries(targets)) handlers.set(path, (_req, res) => void res.writeHead(302, { location }).end());
    const d = downloader({}, { 'intranet.test': ['192.168.1.20'] });
    for (const path of Object.keys(targets)) {
      const out = dest();
      await failsWith(d.download({ identity: identity(host.url + path), destPath: out }), 'URL_NOT_ALLOWED');
      assert.equal(existsSync(out), false);
    }
    assert.equal(net.connections.length, Object.keys(targets).length, 'only the first hop (the test host) was connected');
    // A name resolving to a private address: told like an unreachable host, never connected to.
    handlers.set('/to-name', (_req, res) => void res.writeHead(302, { location: 'http://intranet.test/x.wav' }).end());
    await failsWith(d.download({ identity: identity(host.url + '/to-name'), destPath: dest() }), 'DOWNLOAD_FAILED', /could not be reached/);
    assert.equal(net.connections.length, Object.keys(targets).length + 1);
  });

  it('upstream errors fail with DOWNLOAD_FAILED and the HTTP status', async () => {
    for (const status of [403, 404, 500, 503]) handlers.set(`/s${status}`, (_req, res) => void res.writeHead(status).end('nope'));
    handlers.set('/nolocation', (_req, res) => void res.writeHead(302).end());
    const d = downloader();
    for (const status of [403, 404, 500, 503]) await failsWith(d.download({ identity: identity(`${host.url}/s${status}`), destPath: dest() }), 'DOWNLOAD_FAILED', new RegExp(`HTTP ${status}`));
    await failsWith(d.download({ identity: identity(`${host.url}/nolocation`), destPath: dest() }), 'DOWNLOAD_FAILED', /Location/);
    const unknown = await failsWith(d.download({ identity: identity(`http://unknown.test:${host.port}/x`), destPath: dest() }), 'DOWNLOAD_FAILED', /could not be reached/);
    assert.ok(unknown.cause, 'the resolver error is kept as the cause, for the log');
  });

  it('oversize: refused on Content-Length without reading the body; cut at the cap when streamed', async () => {
    const total = 40 * MiB;
    handlers.set('/declared', (_req, res) => void streamBody(res.writeHead(200, { 'content-length': total }), Buffer.alloc(0), total));
    handlers.set('/chunked', (_req, res) => void streamBody(res.writeHead(200), Buffer.alloc(0), total));
    const d = downloader({ maxBytes: 1 * MiB });
    const out1 = dest();
    await failsWith(d.download({ identity: identity(`${host.url}/declared`), destPath: out1 }), 'DOWNLOAD_TOO_LARGE', /1048576 bytes/);
    const out2 = dest();
    await failsWith(d.download({ identity: identity(`${host.url}/chunked`), destPath: out2 }), 'DOWNLOAD_TOO_LARGE');
    assert.equal(existsSync(out1) || existsSync(out2), false, 'partial files removed');
    await waitServed('/chunked');
    // socket buffers let a few MiB through at most, never the 40 MiB file
    assert.ok(host.served.get('/declared')! < 8 * MiB, `declared: served ${host.served.get('/declared')}`);
    assert.ok(host.served.get('/chunked')! < 8 * MiB, `chunked: served ${host.served.get('/chunked')}`);
  });

  async function waitServed(path: string): Promise<void> {
    // the host notices the closed connection asynchronously
    for (let i = 0; i < 100 && !host.served.has(path); i++) await new Promise((r) => setTimeout(r, 10));
  }

  it('a slow host hits the total timeout (DOWNLOAD_TIMEOUT); an external abort wins over it', async () => {
    handlers.set('/slow', (_req, res) => {
      res.writeHead(200, { 'content-length': 1000 });
      res.write(Buffer.alloc(10));
      const t = setInterval(() => (res.destroyed ? clearInterval(t) : res.write(Buffer.alloc(1))), 50);
      res.once('close', () => clearInterval(t));
    });
    handlers.set('/stall', () => undefined); // never answers
    const d = downloader({ timeoutMs: 300 });
    await failsWith(d.download({ identity: identity(`${host.url}/slow`), destPath: dest() }), 'DOWNLOAD_TIMEOUT', /300 ms/);
    await failsWith(d.download({ identity: identity(`${host.url}/stall`), destPath: dest() }), 'DOWNLOAD_TIMEOUT');
    const ac = new AbortController();
    const reason = new Error('job deleted');
    setTimeout(() => ac.abort(reason), 20);
    await assert.rejects(downloader({ timeoutMs: 5000 }).download({ identity: identity(`${host.url}/stall`), destPath: dest(), signal: ac.signal }), (e) => e === reason);
  });

  it('connect timeout: a TLS handshake that never completes fails like an unreachable host (DOWNLOAD_FAILED, one message)', async (t) => {
    const sockets: Socket[] = [];
    const silent = createNetServer((s) => void sockets.push(s)); // accepts TCP, never speaks TLS
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    t.after(() => {
      for (const s of sockets) s.destroy();
      silent.close();
    });
    const port = (silent.address() as { port: number }).port;
    const d = downloader({ connectTimeoutMs: 200 });
    const tlsToLoopback = new Downloader({
      ...d.options,
      connector: (target) => {
        assert.equal(target.address, '127.0.0.1');
        return tlsConnect({ host: target.address, port: target.port, servername: 'files.test' });
      },
    });
    await failsWith(tlsToLoopback.download({ identity: identity(`https://127.0.0.1:${port}/a.wav`), destPath: dest() }), 'DOWNLOAD_FAILED', /could not be reached/);
  });

  it('https: TLS to the checked address with the URL host for SNI and the certificate; https -> http redirects refused', async (t) => {
    const key = join(dir.path, 'tls.key');
    const cert = join(dir.path, 'tls.crt');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=files.test', '-addext', 'subjectAltName=DNS:files.test'], { stdio: 'ignore' });
    const ca = readFileSync(cert);
    const tlsHost = createHttpsServer({ key: readFileSync(key), cert: ca }, (req, res) => {
      if (req.url === '/down') return void res.writeHead(302, { location: `${host.url}/plain.wav` }).end();
      res.writeHead(200).end(`sni=${(req.socket as import('node:tls').TLSSocket).servername}`);
    });
    await new Promise<void>((r) => tlsHost.listen(0, '127.0.0.1', r));
    t.after(() => {
      tlsHost.closeAllConnections();
      tlsHost.close();
    });
    const port = (tlsHost.address() as { port: number }).port;
    const d = downloader({}, { 'files.test': ['127.0.0.1'], 'wrong.test': ['127.0.0.1'] });
    const tlsDownloader = new Downloader({
      ...d.options,
      connector: (target) => {
        if (!target.tls) return net.connector(target);
        assert.equal(target.address, '127.0.0.1');
        net.connections.push(target);
        // as defaultConnector, plus the test CA
        return tlsConnect({ host: target.address, port: target.port, servername: target.hostname, ca, ALPNProtocols: ['http/1.1'] });
      },
    });
    const out = dest();
    await tlsDownloader.download({ identity: identity(`https://files.test:${port}/a.wav`), destPath: out });
    assert.equal(readFileSync(out, 'utf8'), 'sni=files.test');
    // the certificate is for files.test: another name on the same address fails
    const tlsFailed = await failsWith(tlsDownloader.download({ identity: identity(`https://wrong.test:${port}/a.wav`), destPath: dest() }), 'DOWNLOAD_FAILED', /TLS check/);
    assert.match(String((tlsFailed.cause as NodeJS.ErrnoException).code), /ERR_TLS_CERT_ALTNAME_INVALID/);
    handlers.set('/plain.wav', (_req, res) => void res.writeHead(200).end('x'));
    await failsWith(tlsDownloader.download({ identity: identity(`https://files.test:${port}/down`), destPath: dest() }), 'URL_NOT_ALLOWED', /https to http/);
    assert.equal(host.requests.filter((r) => r.path === '/plain.wav').length, 0);
  });

  describe('early duration check', () => {
    it('a 10-hour WAV is refused from its header: only the first bytes are downloaded', async (t) => {
      const tenHours = wavHeader(10 * 3600, 16000, 1, 16);
      const total = tenHours.length + tenHours.readUInt32LE(40); // 1.15 GB
      handlers.set('/ten-hours.wav', (_req, res) => void streamBody(res.writeHead(200, { 'content-type': 'audio/wav' }), tenHours, total));
      const small = wavHeader(10 * 3600, 8000, 1, 8); // 288 MB, with Content-Length
      handlers.set('/ten-hours-8bit.wav', (_req, res) => void streamBody(res.writeHead(200, { 'content-length': small.length + small.readUInt32LE(40) }), small, small.length + small.readUInt32LE(40)));
      const d = downloader({ maxBytes: 2 * 1024 * MiB });
      for (const path of ['/ten-hours.wav', '/ten-hours-8bit.wav']) {
        const out = dest();
        await failsWith(
          d.download({ identity: identity(host.url + path), destPath: out, maxDurationSec: 3600, channel: null }),
          'DURATION_LIMIT_EXCEEDED',
          /36000\.0 s .*1 channel.*WAV header.*3600 s/,
        );
        assert.equal(existsSync(out), false);
        await waitServed(path);
        const served = host.served.get(path)!;
        assert.ok(served >= HEAD_BYTES, `${path}: served ${served}`);
        assert.ok(served < 8 * MiB, `${path}: served ${served} of ${total} bytes`);
        t.diagnostic(`${path}: the host wrote ${served} bytes before the connection was closed`);
      }
    });

    it('the limit counts the processed channels: stereo over it, one channel of it within', async () => {
      const stereo = Buffer.concat([wavHeader(40, 8000, 2, 8), Buffer.alloc(40 * 8000 * 2)]);
      handlers.set('/stereo.wav', (_req, res) => void res.writeHead(200).end(stereo));
      const d = downloader();
      await failsWith(d.download({ identity: identity(`${host.url}/stereo.wav`), destPath: dest(), maxDurationSec: 60, channel: null }), 'DURATION_LIMIT_EXCEEDED', /2 channel/);
      const got = await d.download({ identity: identity(`${host.url}/stereo.wav`), destPath: dest(), maxDurationSec: 60, channel: 0 });
      assert.equal(got.bytes, stereo.length);
      // a WAV with an unknown length (streamed, data size 0xffffffff) cannot be judged early: downloaded
      const unknown = Buffer.concat([wavHeader(1, 8000, 1, 8), Buffer.alloc(HEAD_BYTES * 2)]);
      unknown.writeUInt32LE(0xffffffff, 40);
      handlers.set('/unknown.wav', (_req, res) => void res.writeHead(200).end(unknown));
      assert.equal((await d.download({ identity: identity(`${host.url}/unknown.wav`), destPath: dest(), maxDurationSec: 1, channel: null })).bytes, unknown.length);
    });

    const probe = nativeProbe();
    let probeWorks = false;
    try {
      if (probe) {
        require('../../src/audio').nativeVersions();
        probeWorks = true;
      }
    } catch {
      probeWorks = false;
    }
    it('a FLAC whose STREAMINFO says 10 hours is refused from the first 64 KiB (native probe on a partial buffer)', { skip: envSkip(probeWorks ? false : 'native addon not built (npm run setup)') }, async () => {
      const flacPath = join(dir.path, 'short.flac');
      execFileSync('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', flacPath, 'synth', '3', 'whitenoise', 'vol', '0.2']);
      const flac = readFileSync(flacPath);
      assert.equal(flac.toString('latin1', 0, 4), 'fLaC');
      // STREAMINFO: total samples = 36 bits starting at the low nibble of byte 8+13.
      const samples = BigInt(10 * 3600 * 16000);
      const si = 8;
      flac[si + 13] = (flac[si + 13]! & 0xf0) | Number((samples >> 32n) & 0xfn);
      flac.writeUInt32BE(Number(samples & 0xffffffffn), si + 14);
      const total = 500 * MiB;
      handlers.set('/ten-hours.flac', (_req, res) => void streamBody(res.writeHead(200, { 'content-type': 'audio/flac' }), flac, total));
      const out = dest();
      await failsWith(
        downloader({ probe }).download({ identity: identity(`${host.url}/ten-hours.flac`), destPath: out, maxDurationSec: 3600, channel: null }),
        'DURATION_LIMIT_EXCEEDED',
        /FLAC header/,
      );
      await waitServed('/ten-hours.flac');
      assert.ok(host.served.get('/ten-hours.flac')! < 8 * MiB);
    });
  });
});
