/**
 * End to end: jobs with URLs served by a real file host on 127.0.0.1 (allowlisted as
 * 127.0.0.1/32 only). The host verifies every download twice: with the package's exported
 * verifyDownloadRequest (JWKS from GET /.well-known/jwks.json) and independently with
 * node:crypto's ECDSA P-521 against the base64 DER key of GET /verification-keys, and both
 * must agree. Covered: the job succeeds on generated audio; the host rejects a missing
 * header, a wrong kid, a token for another job or URL, an expired token and a replayed jti,
 * and those jobs fail with DOWNLOAD_FAILED 403; SSRF refusals (URL_NOT_ALLOWED) of URLs,
 * redirects and callbacks; a 10-hour WAV refused early; oversize and slow downloads.
 * The injected connector refuses (and records) any address outside loopback.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JWK } from 'jose';
import { MemoryJtiStore, verifyDownloadRequest, DownloadVerificationError } from '../../src';
import type { AurisServer } from '../../src/http/server';
import { envSkip, haveShippedModels, modelsMissing } from '../env';
import { api, createJob, FakeAnalyzer, KEY_A, startServer, waitFor, waitForJob, type JobJson } from '../http/helpers';
import { guardedNet, type GuardedNet, startHost, streamBody, tempDir, type TestHost, verifyWithNodeCrypto, wavHeader } from './helpers';

const ROOT = resolve(__dirname, '..', '..', '..');
const MODELS = join(ROOT, 'models');
const haveModels = haveShippedModels();
const MiB = 1024 * 1024;

interface HostLog {
  path: string;
  status: number;
  /** The exported verifier's verdict: 'ok' or its error code. */
  verifier: string;
  /** node:crypto's verdict on the signature against the published DER key: 'ok' or the reason. */
  nodeCrypto: string;
  jti?: string;
  token?: string;
}

describe('URL jobs against a verifying file host', () => {
  const dir = tempDir('auris-dl-e2e-');
  let server: AurisServer;
  let other: AurisServer; // another service instance: another signing key
  let host: TestHost;
  let net: GuardedNet;
  let jwks: { keys: JWK[] };
  let der: { kid: string; public_key: string };
  const log: HostLog[] = [];
  const seen = new MemoryJtiStore();
  let toneWav: Buffer;

  /** How the host decides, per path prefix. */
  function expectations(path: string): { expectedJobId?: string; clockAheadMs: number } {
    if (path.startsWith('/for-another-job/')) return { expectedJobId: '00000000-0000-4000-8000-000000000000', clockAheadMs: 0 };
    if (path.startsWith('/clock-ahead/')) return { clockAheadMs: 10 * 60_000 }; // the host's clock is 10 min ahead: tokens (5 min) look expired
    return { clockAheadMs: 0 };
  }
  /** The URLs a token for `path` may name: the path itself, or the URL that redirected here (the url claim is the URL given at creation). */
  const redirectedFrom: Record<string, string> = { '/tone.wav': '/moved.wav' };
  const urlOk = (claimed: string, path: string): boolean => claimed === host.url + path || (redirectedFrom[path] !== undefined && claimed === host.url + redirectedFrom[path]);

  async function verify(req: IncomingMessage): Promise<HostLog> {
    const path = req.url ?? '/';
    const token = req.headers['x-service-request-verification'];
    const entry: HostLog = { path, status: 0, verifier: 'ok', nodeCrypto: 'ok', token: typeof token === 'string' ? token : undefined };
    const exp = expectations(path);
    // 1. The package's verifier.
    try {
      const v = await verifyDownloadRequest(req.headers, {
        jwks,
        organizationId: 'org-a',
        projectId: 'proj-a',
        expectedUrl: (claimed) => urlOk(claimed, path),
        jobId: exp.expectedJobId,
        seenJti: seen,
        now: () => Date.now() + exp.clockAheadMs,
      });
      entry.jti = v.claims.jti;
    } catch (err) {
      assert.ok(err instanceof DownloadVerificationError, String(err));
      entry.verifier = err.code;
    }
    // 2. Independently: node:crypto against the published DER key, and the claims by hand.
    try {
      if (typeof token !== 'string') throw new Error('no token');
      const { header, claims } = verifyWithNodeCrypto(token, der.public_key);
      if (header.alg !== 'ES512' || header.kid !== der.kid) throw new Error(`header ${JSON.stringify(header)}`);
      const now = (Date.now() + exp.clockAheadMs) / 1000;
      if (claims.organization_id !== 'org-a' || claims.project_id !== 'proj-a') throw new Error('owner');
      if (!urlOk(String(claims.url), path)) throw new Error('url');
      if (exp.expectedJobId && claims.job_id !== exp.expectedJobId) throw new Error('job_id');
      if (typeof claims.jti !== 'string' || typeof claims.iat !== 'number' || typeof claims.exp !== 'number') throw new Error('claims');
      if ((claims.exp as number) < now - 30) throw new Error('expired');
    } catch (err) {
      entry.nodeCrypto = (err as Error).message;
    }
    return entry;
  }

  const files = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();

  before(async () => {
    toneWav = (() => {
      const p = join(dir.path, 'tone.wav');
      execFileSync('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', p, 'synth', '2', 'sine', '440', 'pad', '0', '2']);
      return readFileSync(p);
    })();
    net = guardedNet({ 'internal.test': ['10.9.8.7'], 'files.test': ['127.0.0.1'] });
    server = await startServer(join(dir.path, 'data'), {
      analyzer: haveModels ? undefined : new FakeAnalyzer(), // strict mode (CI) fails at load without models
      download: { resolver: net.resolver, connector: net.connector },
      config: { modelsDir: MODELS, concurrency: 2, limits: { maxDownloadBytes: 8 * MiB, downloadTimeoutMs: 1500 } },
    });
    other = await startServer(join(dir.path, 'data-other'), {
      analyzer: new FakeAnalyzer(),
      download: { resolver: net.resolver, connector: net.connector },
    });
    jwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: JWK[] };
    der = ((await (await fetch(`${server.url}/verification-keys`)).json()) as { keys: Array<{ kid: string; public_key: string }> }).keys[0]!;

    files.set('tone.wav', (_req, res) => void res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': toneWav.length }).end(toneWav));
    files.set('text.wav', (_req, res) => void res.writeHead(200).end('this is not audio, only text. '.repeat(50)));
    files.set('ten-hours.wav', (_req, res) => {
      const h = wavHeader(10 * 3600, 16000, 1, 16);
      void streamBody(res.writeHead(200), h, h.length + h.readUInt32LE(40));
    });
    files.set('big.wav', (_req, res) => void streamBody(res.writeHead(200), wavHeader(60, 16000, 1, 16), 64 * MiB));
    files.set('slow.wav', (_req, res) => {
      res.writeHead(200, { 'content-length': toneWav.length });
      res.write(toneWav.subarray(0, 100));
      const t = setInterval(() => (res.destroyed ? clearInterval(t) : res.write(Buffer.alloc(1))), 100);
      res.once('close', () => clearInterval(t));
    });
    files.set('to-private.wav', (_req, res) => void res.writeHead(302, { location: 'http://10.1.2.3/tone.wav' }).end());
    files.set('to-metadata.wav', (_req, res) => void res.writeHead(301, { location: 'http://169.254.169.254/latest/meta-data/iam' }).end());
    files.set('to-ftp.wav', (_req, res) => void res.writeHead(307, { location: 'ftp://127.0.0.1/tone.wav' }).end());
    files.set('moved.wav', (_req, res) => void res.writeHead(302, { location: '/tone.wav' }).end());

    host = await startHost(async (req, res) => {
      const entry = await verify(req);
      const name = (req.url ?? '/').split('?')[0]!.split('/').pop()!;
      if (entry.verifier !== 'ok') {
        entry.status = 403;
        res.writeHead(403).end('forbidden');
      } else if (files.has(name)) {
        files.get(name)!(req, res);
        entry.status = res.statusCode;
      } else {
        entry.status = 404;
        res.writeHead(404).end();
      }
      log.push(entry);
    });
  });

  after(async () => {
    await server?.close();
    await other?.close();
    await host?.close();
    dir.cleanup();
    // Whatever happened, nothing outside loopback was ever connected to.
    assert.deepEqual(net?.violations ?? [], []);
    // The two verifiers agree on every signature: each request either passed both, or
    // was refused by the exported verifier for a reason node:crypto sees too (or a reason
    // that is not about the signature: replay, claims).
    for (const e of log) {
      if (e.verifier === 'ok') assert.equal(e.nodeCrypto, 'ok', `node:crypto disagrees on ${e.path}`);
      if (e.verifier === 'INVALID_SIGNATURE' || e.verifier === 'UNKNOWN_KEY') assert.notEqual(e.nodeCrypto, 'ok', `node:crypto accepted ${e.path}`);
    }
  });

  async function runJob(s: AurisServer, url: string, query?: string): Promise<JobJson> {
    const res = await createJob(s, KEY_A, { url, query });
    assert.equal(res.status, 201, await res.clone().text());
    const job = (await res.json()) as JobJson;
    return waitForJob(s, KEY_A, job.job_id, undefined, 60_000);
  }
  const lastFor = (path: string): HostLog => log.filter((e) => e.path === path).at(-1)!;

  it('the job succeeds on generated audio; the host verified the download both ways', async () => {
    const url = `${host.url}/tone.wav`;
    const job = await runJob(server, url, 'models=speech&output_period=1024');
    assert.equal(job.status, 'succeeded', JSON.stringify(job.error));
    assert.equal(job.source.size_bytes, toneWav.length);
    const e = lastFor('/tone.wav');
    assert.deepEqual([e.status, e.verifier, e.nodeCrypto], [200, 'ok', 'ok']);
    const claims = verifyWithNodeCrypto(e.token!, der.public_key).claims;
    assert.equal(claims.job_id, job.job_id);
    assert.equal(claims.url, url);
    assert.equal((claims.exp as number) - (claims.iat as number), 300);
    if (haveModels) {
      const results = (await (await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}/results`)).json()) as { result: { channels: Record<string, { time_series: unknown[] }> } };
      assert.equal(results.result.channels['0']!.time_series.length, Math.ceil(4000 / 1024)); // 4 s at output_period 1024 ms
    }
  });

  it('a redirect on the same host: every hop signed with a new jti; the url claim stays the URL given', async () => {
    const url = `${host.url}/moved.wav`;
    const job = await runJob(server, url);
    assert.equal(job.status, 'succeeded', JSON.stringify(job.error));
    const hops = log.slice(-2);
    assert.deepEqual(hops.map((h) => [h.path, h.status, h.verifier, h.nodeCrypto]), [
      ['/moved.wav', 302, 'ok', 'ok'],
      ['/tone.wav', 200, 'ok', 'ok'],
    ]);
    assert.notEqual(hops[0]!.jti, hops[1]!.jti);
    for (const h of hops) assert.equal(verifyWithNodeCrypto(h.token!, der.public_key).claims.url, url);
  });

  it('rejected requests: missing header, replayed jti (direct requests: 403)', async () => {
    const missing = await fetch(`${host.url}/tone.wav`);
    assert.equal(missing.status, 403);
    assert.equal(lastFor('/tone.wav').verifier, 'MISSING_TOKEN');
    const used = log.find((e) => e.path === '/tone.wav' && e.status === 200)!;
    const replay = await fetch(`${host.url}/tone.wav`, { headers: { 'x-service-request-verification': used.token! } });
    assert.equal(replay.status, 403);
    const e = lastFor('/tone.wav');
    assert.equal(e.verifier, 'REPLAYED');
    assert.equal(e.nodeCrypto, 'ok', 'the signature itself is fine: only the jti store catches a replay');
  });

  it('rejected downloads fail the job with DOWNLOAD_FAILED 403: wrong kid, another job, another URL, expired', async () => {
    const cases: Array<[AurisServer, string, string, string]> = [
      [other, `${host.url}/tone.wav`, '/tone.wav', 'UNKNOWN_KEY'], // signed by another instance's key
      [server, `${host.url}/for-another-job/tone.wav`, '/for-another-job/tone.wav', 'CLAIM_MISMATCH'],
      [server, `http://files.test:${host.port}/tone.wav`, '/tone.wav', 'CLAIM_MISMATCH'], // the host expects its own URL
      [server, `${host.url}/clock-ahead/tone.wav`, '/clock-ahead/tone.wav', 'TOKEN_EXPIRED'],
    ];
    for (const [s, url, path, reason] of cases) {
      const job = await runJob(s, url);
      assert.equal(job.status, 'failed', url);
      assert.equal(job.error?.code, 'DOWNLOAD_FAILED', url);
      assert.match(job.error!.message, /HTTP 403/, url);
      assert.equal(lastFor(path).verifier, reason, url);
    }
    // the files.test URL reached 127.0.0.1 through the injected resolver (allowlisted CIDR), with one lookup
    assert.ok(net.connections.some((c) => c.hostname === 'files.test' && c.address === '127.0.0.1'));
  });

  it('SSRF: private, loopback (not allowlisted) and metadata addresses and user:password URLs are refused at creation; a private-resolving name fails like an unreachable host; redirects to them fail with URL_NOT_ALLOWED', async () => {
    const before = host.requests.length;
    const urls = [
      'http://10.0.0.1/a.wav',
      'http://169.254.169.254/latest/meta-data/',
      `http://localhost:${host.port}/tone.wav`,
      `http://[::1]:${host.port}/tone.wav`,
      `http://127.0.0.2:${host.port}/tone.wav`,
      'http://[::ffff:10.0.0.1]/a.wav',
      'http://0xa9fea9fe/latest/meta-data/',
      `http://user:secret@127.0.0.1:${host.port}/tone.wav`,
    ];
    for (const url of urls) {
      const res = await createJob(server, KEY_A, { url });
      assert.equal(res.status, 400, url);
      const p = (await res.json()) as { code: string; errors: Array<{ parameter: string }> };
      assert.equal(p.code, 'INVALID_BODY', url);
      assert.equal(p.errors[0]!.parameter, 'url');
    }
    const internal = await runJob(server, 'http://internal.test/a.wav');
    const unknown = await runJob(server, 'http://no-such-host.test/a.wav');
    assert.equal(internal.error?.code, 'DOWNLOAD_FAILED', JSON.stringify(internal.error));
    assert.deepEqual(internal.error, unknown.error, 'a name resolving to a private address reads like a name that does not resolve');
    assert.equal(host.requests.length, before, 'none of them reached the host');
    for (const path of ['to-private.wav', 'to-metadata.wav', 'to-ftp.wav']) {
      const job = await runJob(server, `${host.url}/${path}`);
      assert.equal(job.error?.code, 'URL_NOT_ALLOWED', path);
    }
    // A non-http scheme never becomes a job.
    const ftp = await createJob(server, KEY_A, { url: 'ftp://127.0.0.1/tone.wav' });
    assert.equal(ftp.status, 400);
    assert.deepEqual(net.violations, []);
  });

  it('callbacks go through the same guard: a private callback address is refused at creation, a host name resolving to one when sent, without a connection', async () => {
    // A literal private address is refused at creation (400).
    const literal = await api(server, KEY_A)(`/file-processing/jobs?models=speech&output_period=1024&callback=${encodeURIComponent('http://10.0.0.1/hook')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${host.url}/tone.wav` }),
    });
    assert.equal(literal.status, 400, await literal.text());
    const failed = async (): Promise<number> => Number(/auris_callbacks_total\{outcome="failed"\} (\d+)/.exec(await (await fetch(`${server.url}/metrics`)).text())?.[1] ?? 0);
    const before = await failed();
    const job = await runJob(server, `${host.url}/tone.wav`, `models=speech&output_period=1024&callback=${encodeURIComponent('http://internal.test/hook')}`);
    assert.equal(job.status, 'succeeded', JSON.stringify(job.error));
    await waitFor(async () => (await failed()) === before + 1, 10_000, 'the refused callback to internal.test');
    // internal.test resolves to 10.9.8.7 (the injected resolver): refused after resolution, never connected to.
    assert.ok(net.lookups.includes('internal.test'), 'the callback host name was resolved');
    assert.deepEqual(net.violations, []);
  });

  it('a 10-hour WAV is refused from its header (DURATION_LIMIT_EXCEEDED) after a few MiB of 1.15 GB', async () => {
    const job = await runJob(server, `${host.url}/ten-hours.wav`);
    assert.equal(job.error?.code, 'DURATION_LIMIT_EXCEEDED', JSON.stringify(job.error));
    await waitFor(() => host.served.has('/ten-hours.wav'), 5000, 'host bookkeeping');
    assert.ok(host.served.get('/ten-hours.wav')! < 8 * MiB, `served ${host.served.get('/ten-hours.wav')}`);
  });

  it('oversize and slow downloads fail with DOWNLOAD_TOO_LARGE and DOWNLOAD_TIMEOUT; a 404 with DOWNLOAD_FAILED', async () => {
    const big = await runJob(server, `${host.url}/big.wav`);
    assert.equal(big.error?.code, 'DOWNLOAD_TOO_LARGE', JSON.stringify(big.error));
    assert.match(big.error!.message, new RegExp(String(8 * MiB)));
    await waitFor(() => host.served.has('/big.wav'), 5000, 'host bookkeeping');
    assert.ok(host.served.get('/big.wav')! < 16 * MiB, `served ${host.served.get('/big.wav')} of 64 MiB`);
    const slow = await runJob(server, `${host.url}/slow.wav`);
    assert.equal(slow.error?.code, 'DOWNLOAD_TIMEOUT', JSON.stringify(slow.error));
    const missing = await runJob(server, `${host.url}/missing.wav`);
    assert.equal(missing.error?.code, 'DOWNLOAD_FAILED');
    assert.match(missing.error!.message, /HTTP 404/);
  });

  it('a downloaded file that is not audio fails with the decoder code', { skip: envSkip(modelsMissing(MODELS)) }, async () => {
    const job = await runJob(server, `${host.url}/text.wav`);
    assert.match(job.error?.code ?? '', /^(UNSUPPORTED_FORMAT|CORRUPT_AUDIO)$/);
  });
});
