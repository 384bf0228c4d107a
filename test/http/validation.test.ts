/**
 * Request validation, auth, body methods, 413/415 and the problem format, over real sockets.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AurisServer } from '../../src/http/server';
import { api, createJob, FakeAnalyzer, fakeWav, KEY_A, KEY_B, startServer, tempDir, type JobJson } from './helpers';

interface ProblemJson {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  instance?: string;
  errors?: Array<{ parameter: string; message: string }>;
  valid_models?: string[];
  unknown_models?: string[];
  supported_media_types?: string[];
  limit_bytes?: number;
  retry_after?: number;
}

async function problem(res: Response, status: number, code: string): Promise<ProblemJson> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  const p = JSON.parse(text) as ProblemJson;
  assert.equal(p.code, code, text);
  assert.equal(p.status, status);
  assert.equal(typeof p.title, 'string');
  assert.equal(typeof p.detail, 'string');
  assert.match(p.type, /^urn:auris:problem:/);
  return p;
}

describe('job creation: validation, auth, bodies', () => {
  const dir = tempDir();
  let server: AurisServer;
  const analyzer = new FakeAnalyzer();

  before(async () => {
    // No worker: jobs stay queued (these tests only look at creation), so nothing downloads the
    // example URLs below or calls their example callbacks (tests stay on 127.0.0.1).
    server = await startServer(dir.path, { analyzer, startWorker: false, config: { limits: { maxUploadBytes: 64 * 1024 } } });
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  const post = (query: string, init: RequestInit = { method: 'POST', headers: { 'content-type': 'audio/wav' }, body: fakeWav() }) =>
    api(server, KEY_A)(`/file-processing/jobs?${query}`, init);

  // One case per rule of each query parameter: [query, offending parameter].
  const invalid: Array<[string, string]> = [
    ['output_period=1024', 'models'],
    ['models=&output_period=1024', 'models'],
    ['models=speech,,gender&output_period=1024', 'models'],
    ['models=speech', 'output_period'],
    ['models=speech&output_period=1000', 'output_period'],
    ['models=speech&output_period=0', 'output_period'],
    ['models=speech&output_period=-64', 'output_period'],
    ['models=speech&output_period=abc', 'output_period'],
    ['models=speech&output_period=64.5', 'output_period'],
    ['models=speech&output_period=3600064', 'output_period'],
    ['models=speech&output_period=1024&channel=-1', 'channel'],
    ['models=speech&output_period=1024&channel=x', 'channel'],
    ['models=speech&output_period=1024&channel=1.5', 'channel'],
    ['models=speech&output_period=1024&include_summary=maybe', 'include_summary'],
    ['models=speech&output_period=1024&include_transitions=2', 'include_transitions'],
    ['models=speech&output_period=1024&include_raw_values=yes', 'include_raw_values'],
    ['models=speech&output_period=1024&volume_threshold=loud', 'volume_threshold'],
    ['models=speech&output_period=1024&volume_threshold=10', 'volume_threshold'],
    ['models=speech&output_period=1024&volume_threshold=-200', 'volume_threshold'],
    ['models=speech&output_period=1024&callback=not-a-url', 'callback'],
    ['models=speech&output_period=1024&callback=ftp://example.com/x', 'callback'],
    ['models=speech&output_period=1024&callback=/relative/path', 'callback'],
    ['models=speech&output_period=1024&surprise=1', 'surprise'],
  ];
  for (const [query, parameter] of invalid) {
    it(`400 INVALID_PARAMETER for ${query}`, async () => {
      const p = await problem(await post(query), 400, 'INVALID_PARAMETER');
      assert.ok(
        p.errors?.some((e) => e.parameter === parameter),
        `errors should name ${parameter}: ${JSON.stringify(p.errors)}`,
      );
      assert.equal(p.instance, '/file-processing/jobs');
    });
  }

  it('400 UNKNOWN_MODEL lists the valid models', async () => {
    const p = await problem(await post('models=speech,laughter&output_period=1024'), 400, 'UNKNOWN_MODEL');
    assert.deepEqual(p.unknown_models, ['laughter']);
    assert.deepEqual(p.valid_models, ['speech', 'arousal', 'gender']);
    assert.match(p.detail, /laughter/);
    assert.match(p.detail, /speech, arousal, gender/);
  });

  it('accepts every parameter at its valid extremes and echoes them in the record', async () => {
    const cb = 'https://example.com/hook?x=1';
    const res = await post(
      `models=speech,gender,speech&output_period=3600000&channel=1&include_summary=true&include_transitions=false&include_raw_values=true&volume_threshold=-35.5&callback=${encodeURIComponent(cb)}`,
    );
    assert.equal(res.status, 201, await res.clone().text());
    const job = (await res.json()) as JobJson;
    assert.deepEqual(job.request, {
      models: ['speech', 'gender'],
      output_period: 3600000,
      channel: 1,
      include_summary: true,
      include_transitions: false,
      include_raw_values: true,
      volume_threshold: -35.5,
      callback: cb,
    });
    assert.equal(res.headers.get('location'), `/file-processing/jobs/${job.job_id}`);
  });

  it('direct upload: 201 with the job record, queued, source upload', async () => {
    const body = fakeWav(5000);
    const res = await createJob(server, KEY_A, { audio: body, contentType: 'audio/x-wav' });
    assert.equal(res.status, 201);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const job = (await res.json()) as JobJson;
    assert.match(job.job_id, /^[0-9a-f-]{36}$/);
    assert.equal(job.status, 'queued');
    assert.equal(job.progress, 0);
    assert.deepEqual(job.source, { method: 'upload', url: null, content_type: 'audio/x-wav', size_bytes: 5000 });
    assert.equal(job.error, null);
    assert.equal(job.audio, null);
    assert.ok(Date.parse(job.created_at) > 0);
    // the record read back is the same
    const again = await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`);
    assert.equal(again.status, 200);
    assert.equal(((await again.json()) as JobJson).job_id, job.job_id);
  });

  for (const type of ['audio/wav', 'audio/wave', 'audio/flac', 'audio/x-flac', 'audio/mpeg', 'audio/mp3', 'audio/ogg', 'audio/opus', 'audio/wav; codecs=1']) {
    it(`accepts Content-Type ${type}`, async () => {
      const res = await createJob(server, KEY_A, { contentType: type });
      assert.equal(res.status, 201, await res.clone().text());
    });
  }

  it('URL method: 201 with source url', async () => {
    const res = await createJob(server, KEY_A, { url: 'https://files.example.com/a.wav' });
    assert.equal(res.status, 201);
    const job = (await res.json()) as JobJson;
    assert.deepEqual(job.source, { method: 'url', url: 'https://files.example.com/a.wav', content_type: null, size_bytes: null });
  });

  const badBodies: Array<[string, string]> = [
    ['{}', 'url'],
    ['{"url": 5}', 'url'],
    ['{"url": "file:///etc/passwd"}', 'url'],
    ['{"url": "not a url"}', 'url'],
    ['{"url": "https://x.example/a.wav", "extra": 1}', 'extra'],
    ['[1,2]', 'body'],
  ];
  for (const [body, field] of badBodies) {
    it(`400 INVALID_BODY for JSON body ${body}`, async () => {
      const p = await problem(await post('models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': 'application/json' }, body }), 400, 'INVALID_BODY');
      assert.ok(p.errors?.some((e) => e.parameter === field), JSON.stringify(p));
    });
  }

  it('400 INVALID_BODY for malformed JSON', async () => {
    const p = await problem(await post('models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"url": ' }), 400, 'INVALID_BODY');
    assert.equal(p.detail, 'The body must be a JSON object: {"url": "..."}.'); // Fastify's FST_ERR_CTP_INVALID_JSON_BODY translated
  });

  it('400 INVALID_BODY for an empty JSON body', async () => {
    const p = await problem(await post('models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' }), 400, 'INVALID_BODY');
    assert.equal(p.detail, 'The body must be a JSON object: {"url": "..."}.'); // FST_ERR_CTP_EMPTY_JSON_BODY
  });

  it('400 INVALID_BODY for an empty upload', async () => {
    await problem(await post('models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': 'audio/wav' }, body: Buffer.alloc(0) }), 400, 'INVALID_BODY');
  });

  for (const type of ['text/plain', 'video/mp4', 'multipart/form-data; boundary=x', 'application/xml']) {
    it(`415 UNSUPPORTED_MEDIA_TYPE for ${type}`, async () => {
      const p = await problem(await post('models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': type }, body: 'hello' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      assert.ok(p.supported_media_types?.includes('audio/wav'));
    });
  }

  it('415 without a body or Content-Type', async () => {
    await problem(await post('models=speech&output_period=1024', { method: 'POST' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('413 PAYLOAD_TOO_LARGE over the upload limit (declared length)', async () => {
    const p = await problem(await createJob(server, KEY_A, { audio: Buffer.alloc(64 * 1024 + 1) }), 413, 'PAYLOAD_TOO_LARGE');
    assert.equal(p.limit_bytes, 64 * 1024);
  });

  it('413 PAYLOAD_TOO_LARGE over the upload limit (chunked, no Content-Length), and nothing is kept', async () => {
    const chunk = Buffer.alloc(16 * 1024);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= 10) return c.close();
        sent++;
        c.enqueue(chunk);
      },
    });
    const uploadsOf = async () => (await server.backends.blobs.keys()).filter((k) => k.startsWith('uploads/')).length;
    const before = (await server.backends.jobs.list()).length;
    const uploadsBefore = await uploadsOf();
    const res = await api(server, KEY_A)('/file-processing/jobs?models=speech&output_period=1024', {
      method: 'POST',
      headers: { 'content-type': 'audio/wav' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    await problem(res, 413, 'PAYLOAD_TOO_LARGE');
    assert.equal((await server.backends.jobs.list()).length, before);
    assert.equal(await uploadsOf(), uploadsBefore, 'no upload kept for the rejected request');
  });

  it('accepts an upload of exactly the limit', async () => {
    const res = await createJob(server, KEY_A, { audio: fakeWav(64 * 1024) });
    assert.equal(res.status, 201);
  });

  it('401 MISSING_API_KEY and INVALID_API_KEY on every job endpoint, before validation', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    const cases: Array<[string, string]> = [
      ['POST', '/file-processing/jobs'],
      ['GET', `/file-processing/jobs/${id}`],
      ['GET', `/file-processing/jobs/${id}/results`],
      ['DELETE', `/file-processing/jobs/${id}`],
    ];
    for (const [method, path] of cases) {
      await problem(await api(server, null)(path, { method }), 401, 'MISSING_API_KEY');
      await problem(await api(server, 'wrong-key-123')(path, { method }), 401, 'INVALID_API_KEY');
      await problem(await api(server, KEY_A + 'x')(path, { method }), 401, 'INVALID_API_KEY');
    }
  });

  it('404 JOB_NOT_FOUND for unknown and malformed ids; 404 NOT_FOUND for unknown routes', async () => {
    await problem(await api(server, KEY_A)('/file-processing/jobs/00000000-0000-4000-8000-000000000000'), 404, 'JOB_NOT_FOUND');
    await problem(await api(server, KEY_A)('/file-processing/jobs/..%2F..%2Fetc'), 404, 'JOB_NOT_FOUND');
    await problem(await api(server, KEY_A)('/file-processing/jobs/abc/results'), 404, 'JOB_NOT_FOUND');
    await problem(await api(server, KEY_A)('/nope'), 404, 'NOT_FOUND');
  });
});

describe('per-key limits', () => {
  it('429 RATE_LIMITED with Retry-After once the burst is spent, per key', async () => {
    const dir = tempDir();
    const analyzer = new FakeAnalyzer();
    const server = await startServer(dir.path, { analyzer, config: { limits: { rateLimitRps: 0.5, rateLimitBurst: 3 } } });
    try {
      const get = api(server, KEY_A);
      for (let i = 0; i < 3; i++) assert.equal((await get('/file-processing/jobs/00000000-0000-4000-8000-000000000000')).status, 404);
      const res = await get('/file-processing/jobs/00000000-0000-4000-8000-000000000000');
      const p = await problem(res, 429, 'RATE_LIMITED');
      assert.equal(res.headers.get('retry-after'), '2');
      assert.equal(p.retry_after, 2);
      // another key has its own bucket
      assert.equal((await api(server, KEY_B)('/file-processing/jobs/00000000-0000-4000-8000-000000000000')).status, 404);
    } finally {
      await server.close();
      dir.cleanup();
    }
  });

  it('429 TOO_MANY_ACTIVE_JOBS with Retry-After at the unfinished-job limit', async () => {
    const dir = tempDir();
    const analyzer = new FakeAnalyzer();
    analyzer.gated = true;
    const server = await startServer(dir.path, { analyzer, config: { limits: { maxActiveJobsPerKey: 2 } } });
    try {
      assert.equal((await createJob(server, KEY_A, {})).status, 201);
      assert.equal((await createJob(server, KEY_A, {})).status, 201);
      const res = await createJob(server, KEY_A, {});
      await problem(res, 429, 'TOO_MANY_ACTIVE_JOBS');
      assert.ok(Number(res.headers.get('retry-after')) > 0);
      assert.equal((await createJob(server, KEY_B, {})).status, 201, 'another key is not limited');
    } finally {
      analyzer.gated = false;
      analyzer.release();
      await server.close();
      dir.cleanup();
    }
  });
});
