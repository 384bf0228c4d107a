/**
 * What integrators rely on besides jobs: CORS for browser apps and GET /models.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AurisServer } from '../../src/http/server';
import { ModelRegistry } from '../../src/inference/registry';
import { api, createJob, fakeWav, FakeAnalyzer, KEY_A, KEY_B, startServer, tempDir } from './helpers';

describe('CORS', () => {
  const dir = tempDir();
  let server: AurisServer;
  before(async () => {
    server = await startServer(dir.path, { analyzer: new FakeAnalyzer(), config: { corsOrigins: ['http://app.example:3000'] } });
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  it('a preflight from an allowed origin is answered without an API key, naming the headers a client sends', async () => {
    const res = await fetch(`${server.url}/file-processing/jobs?models=speech&output_period=1024`, {
      method: 'OPTIONS',
      headers: { origin: 'http://app.example:3000', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-api-key,content-type' },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), 'http://app.example:3000');
    assert.match(String(res.headers.get('access-control-allow-methods')), /POST/);
    assert.match(String(res.headers.get('access-control-allow-headers')), /x-api-key/);
    assert.match(String(res.headers.get('access-control-allow-headers')), /idempotency-key/);
  });

  it('actual requests from the allowed origin carry Access-Control-Allow-Origin and expose Location', async () => {
    const res = await createJob(server, KEY_A, {});
    assert.equal(res.status, 201);
    const get = await api(server, KEY_A)('/file-processing/jobs', { headers: { origin: 'http://app.example:3000' } });
    assert.equal(get.status, 200);
    assert.equal(get.headers.get('access-control-allow-origin'), 'http://app.example:3000');
    assert.match(String(get.headers.get('access-control-expose-headers')), /location/);
  });

  it('another origin gets no CORS grant (the browser blocks it)', async () => {
    const res = await fetch(`${server.url}/file-processing/jobs`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'GET' },
    });
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });

  it('without CORS_ORIGINS no CORS header is sent; a bad origin is a configuration error', async () => {
    const { loadConfig } = await import('../../src/config');
    assert.deepEqual(loadConfig([], {}).corsOrigins, []);
    assert.deepEqual(loadConfig([], { CORS_ORIGINS: 'https://a.example, http://b.example:8080' }).corsOrigins, ['https://a.example', 'http://b.example:8080']);
    assert.throws(() => loadConfig(['--cors-origins', 'https://a.example/path']), /not an origin/);
  });
});

describe('GET /models', () => {
  const dir = tempDir();
  let server: AurisServer;
  before(async () => {
    server = await startServer(dir.path, { analyzer: new FakeAnalyzer() });
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  it('lists the installed models with labels, raw keys, receptive field and lookahead, without an API key', async () => {
    const res = await fetch(`${server.url}/models`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as {
      step_ms: number;
      sample_rate: number;
      models: Array<{ name: string; version: string; labels: string[]; raw_keys: string[]; receptive_field_ms: number; lookahead_ms: number; also_runs: string[] }>;
    };
    assert.equal(body.step_ms, 64);
    assert.equal(body.sample_rate, 16000);
    const names = body.models.map((m) => m.name);
    assert.deepEqual(names, ModelRegistry.loadSync({}).names(), 'every installed model, sorted');
    for (const n of ['arousal', 'gender', 'speech']) assert.ok(names.includes(n), n);
    const speech = body.models.find((m) => m.name === 'speech')!;
    assert.deepEqual([...speech.raw_keys].sort(), ['music', 'other', 'speech']);
    assert.deepEqual(speech.labels, [...speech.raw_keys, 'silence']);
    assert.ok(speech.receptive_field_ms > speech.lookahead_ms && speech.lookahead_ms > 0);
    assert.ok(speech.version.length > 0);
    const gender = body.models.find((m) => m.name === 'gender')!;
    assert.deepEqual(gender.also_runs, ['speech']);
    assert.ok(gender.labels.includes('female') && gender.labels.includes('male'));
  });
});

describe('RateLimit headers', () => {
  it('RateLimit-Policy and RateLimit count down the per-key bucket; the 429 carries them beside Retry-After', async () => {
    const dir = tempDir();
    const server = await startServer(dir.path, { analyzer: new FakeAnalyzer(), config: { limits: { rateLimitRps: 0.5, rateLimitBurst: 3 } } });
    try {
      const seen: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await api(server, KEY_A)('/file-processing/jobs');
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('ratelimit-policy'), '"per-key";q=3;w=6');
        seen.push(String(res.headers.get('ratelimit')));
      }
      assert.deepEqual(seen.map((h) => /r=(\d+)/.exec(h)![1]), ['2', '1', '0']);
      const limited = await api(server, KEY_A)('/file-processing/jobs');
      assert.equal(limited.status, 429);
      assert.ok(Number(limited.headers.get('retry-after')) >= 1);
      assert.match(String(limited.headers.get('ratelimit')), /^"per-key";r=0;t=\d+$/);
      // Another key has its own bucket.
      const other = await api(server, KEY_B)('/file-processing/jobs');
      assert.match(String(other.headers.get('ratelimit')), /r=2;/);
    } finally {
      await server.close();
      dir.cleanup();
    }
  });
});

describe('Idempotency-Key and the unfinished-jobs limit', () => {
  it('a replay returns the job even at the limit; a new job is refused with 429 TOO_MANY_ACTIVE_JOBS', async () => {
    const dir = tempDir();
    // concurrency 0: jobs stay queued, so the key stays at its limit of 1
    const server = await startServer(dir.path, { analyzer: new FakeAnalyzer(), config: { concurrency: 0, limits: { maxActiveJobsPerKey: 1 } } });
    try {
      const post = (key?: string) =>
        api(server, KEY_A)('/file-processing/jobs?models=speech&output_period=1024', {
          method: 'POST',
          headers: { 'content-type': 'audio/wav', ...(key ? { 'idempotency-key': key } : {}) },
          body: fakeWav(),
        });
      const first = await post('limit-key');
      assert.equal(first.status, 201);
      const again = await post('limit-key');
      assert.equal(again.status, 201);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(((await again.json()) as { job_id: string }).job_id, ((await first.json()) as { job_id: string }).job_id);
      const other = await post('another-key');
      assert.equal(other.status, 429);
      assert.equal(((await other.json()) as { code: string }).code, 'TOO_MANY_ACTIVE_JOBS');
      assert.equal((await post()).status, 429);
    } finally {
      await server.close();
      dir.cleanup();
    }
  });
});
