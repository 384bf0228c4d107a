/**
 * The job lifecycle over real sockets with a fake analyzer: states and progress, results,
 * project isolation, DELETE, retention, the URL method, limits that fail a job, metrics.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { AurisServer } from '../../src/http/server';
import { api, createJob, FakeAnalyzer, KEY_A, KEY_A2, KEY_B, sleep, startServer, tempDir, waitFor, waitForJob, type JobJson } from './helpers';

async function created(res: Response): Promise<JobJson> {
  const text = await res.text();
  assert.equal(res.status, 201, text);
  return JSON.parse(text) as JobJson;
}

describe('job lifecycle', () => {
  const dir = tempDir();
  let server: AurisServer;
  const analyzer = new FakeAnalyzer();

  before(async () => {
    server = await startServer(dir.path, { analyzer, config: { concurrency: 1 } });
  });
  after(async () => {
    analyzer.gated = false;
    analyzer.release();
    await server.close();
    dir.cleanup();
  });

  it('goes queued -> processing (with progress and audio facts) -> succeeded; results only when ready', async () => {
    analyzer.gated = true;
    const job = await created(await createJob(server, KEY_A, { query: 'models=speech,gender&output_period=512&include_summary=true' }));
    assert.equal(job.status, 'queued');
    const get = api(server, KEY_A);

    // The single worker picks it up and stops at the first gate.
    const processing = await waitForJob(server, KEY_A, job.job_id, (j) => j.status === 'processing');
    assert.equal(processing.progress, 0);
    assert.ok(processing.started_at);
    let res = await get(`/file-processing/jobs/${job.job_id}/results`);
    assert.equal(res.status, 409);
    assert.equal(res.headers.get('retry-after'), '1');
    const notReady = (await res.json()) as { code: string; job_status: string };
    assert.equal(notReady.code, 'RESULTS_NOT_READY');
    assert.equal(notReady.job_status, 'processing');

    await waitFor(() => analyzer.waiting === 1, 5000, 'analyzer at gate 1');
    analyzer.release();
    const half = await waitForJob(server, KEY_A, job.job_id, (j) => j.progress === 0.5);
    assert.equal(half.status, 'processing');
    assert.deepEqual(half.audio, { duration_sec: 2, channels: 1, sample_rate: 16000, format: 'WAV', processed_channels: 1 });

    await waitFor(() => analyzer.waiting === 1, 5000, 'analyzer at gate 2');
    analyzer.gated = false;
    analyzer.release();
    const done = await waitForJob(server, KEY_A, job.job_id);
    assert.equal(done.status, 'succeeded');
    assert.equal(done.progress, 1);
    assert.equal(done.error, null);
    assert.equal(done.results_url, `/file-processing/jobs/${job.job_id}/results`);
    assert.ok(done.finished_at && done.expires_at);
    assert.ok(Date.parse(done.expires_at!) - Date.parse(done.finished_at!) === 24 * 3600 * 1000);

    res = await get(done.results_url!);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const text = await res.text();
    assert.equal(Buffer.byteLength(text), done.results_size_bytes);
    const results = JSON.parse(text) as { job_id: string; result: { channels: Record<string, { time_series: unknown[] }> } };
    assert.equal(results.job_id, job.job_id);
    assert.deepEqual(Object.keys(results.result.channels), ['0']);
    assert.equal(results.result.channels['0']!.time_series.length, 2);

    // The analyzer got the job's parameters.
    const call = analyzer.calls.at(-1)!;
    assert.deepEqual(call.options.models, ['speech', 'gender']);
    assert.equal(call.options.outputPeriodMs, 512);
    assert.equal(call.options.includeSummary, true);
    assert.equal(call.run.maxDurationSec, 3600);
    // The upload is deleted once the job has finished (right after the record says so).
    const own = async (): Promise<string[]> => (await server.backends.blobs.keys()).filter((k) => k.includes(job.job_id));
    await waitFor(async () => (await own()).length === 1, 5000, 'upload deletion');
    assert.deepEqual(await own(), [`results/${job.job_id}.json`]);
  });

  it('a failed job has error.code and message; its results answer 409 JOB_FAILED', async () => {
    analyzer.fail = Object.assign(new Error('Not a WAV/FLAC/MP3 file'), { code: 'UNSUPPORTED_FORMAT' });
    try {
      const job = await created(await createJob(server, KEY_A, {}));
      const done = await waitForJob(server, KEY_A, job.job_id);
      assert.equal(done.status, 'failed');
      assert.deepEqual(done.error, { code: 'UNSUPPORTED_FORMAT', message: 'Not a WAV/FLAC/MP3 file' });
      assert.equal(done.results_url, null);
      const res = await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}/results`);
      assert.equal(res.status, 409);
      const p = (await res.json()) as { code: string; job_error: { code: string } };
      assert.equal(p.code, 'JOB_FAILED');
      assert.equal(p.job_error.code, 'UNSUPPORTED_FORMAT');
      assert.deepEqual((await server.backends.blobs.keys()).filter((k) => k.includes(job.job_id)), [], 'upload deleted after failure');
    } finally {
      analyzer.fail = null;
    }
  });

  it('an unexpected error fails the job with PROCESSING_FAILED and no internal detail', async () => {
    analyzer.fail = new Error('secret internal path /x/y');
    try {
      const job = await created(await createJob(server, KEY_A, {}));
      const done = await waitForJob(server, KEY_A, job.job_id);
      assert.equal(done.error?.code, 'PROCESSING_FAILED');
      assert.doesNotMatch(done.error!.message, /secret/);
    } finally {
      analyzer.fail = null;
    }
  });

  it('a job is visible only to its own project: another project gets 404, the same project with another key sees it', async () => {
    const job = await created(await createJob(server, KEY_A, {}));
    await waitForJob(server, KEY_A, job.job_id);
    for (const path of [`/file-processing/jobs/${job.job_id}`, `/file-processing/jobs/${job.job_id}/results`]) {
      const res = await api(server, KEY_B)(path);
      assert.equal(res.status, 404);
      const body = await res.text();
      assert.match(body, /JOB_NOT_FOUND/);
      assert.doesNotMatch(body, /proj-a|org-a|succeeded/);
    }
    const del = await api(server, KEY_B)(`/file-processing/jobs/${job.job_id}`, { method: 'DELETE' });
    assert.equal(del.status, 404);
    assert.equal((await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`)).status, 200, 'still there after the other project tried to delete it');
    assert.equal((await api(server, KEY_A2)(`/file-processing/jobs/${job.job_id}`)).status, 200);
  });

  it('DELETE removes a finished job and its results', async () => {
    const job = await created(await createJob(server, KEY_A, {}));
    await waitForJob(server, KEY_A, job.job_id);
    const res = await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`, { method: 'DELETE' });
    assert.equal(res.status, 204);
    assert.equal((await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`)).status, 404);
    assert.equal((await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}/results`)).status, 404);
    assert.equal((await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`, { method: 'DELETE' })).status, 404);
    assert.deepEqual((await server.backends.blobs.keys()).filter((k) => k.includes(job.job_id)), []);
  });

  it('DELETE of a processing job stops it; of a queued job removes it before it runs', async () => {
    analyzer.gated = true;
    const running = await created(await createJob(server, KEY_A, {}));
    const queued = await created(await createJob(server, KEY_A, {}));
    await waitForJob(server, KEY_A, running.job_id, (j) => j.status === 'processing');
    const callsBefore = analyzer.calls.length;
    assert.equal((await api(server, KEY_A)(`/file-processing/jobs/${queued.job_id}`, { method: 'DELETE' })).status, 204);
    assert.equal((await api(server, KEY_A)(`/file-processing/jobs/${running.job_id}`, { method: 'DELETE' })).status, 204);
    await waitFor(() => analyzer.running === 0, 5000, 'the running job to stop');
    analyzer.gated = false;
    // The queue moves on; the deleted queued job is never analysed.
    const next = await created(await createJob(server, KEY_A, {}));
    await waitForJob(server, KEY_A, next.job_id);
    assert.equal(analyzer.calls.length, callsBefore + 1);
    assert.deepEqual((await server.backends.blobs.keys()).filter((k) => k.includes(running.job_id) || k.includes(queued.job_id)), []);
  });

  it('fails a job whose result exceeds the result size limit with RESULT_TOO_LARGE', async () => {
    const dir2 = tempDir();
    const big = new FakeAnalyzer();
    big.steps = 5000;
    const s2 = await startServer(dir2.path, { analyzer: big, config: { limits: { maxResultBytes: 10_000 } } });
    try {
      const job = await created(await createJob(s2, KEY_A, {}));
      const done = await waitForJob(s2, KEY_A, job.job_id);
      assert.equal(done.status, 'failed');
      assert.equal(done.error?.code, 'RESULT_TOO_LARGE');
      assert.match(done.error!.message, /output_period/);
      assert.match(done.error!.message, /split the models/);
    } finally {
      await s2.close();
      dir2.cleanup();
    }
  });

  it('fails a job over the duration limit (combined over channels) with DURATION_LIMIT_EXCEEDED', async () => {
    const dir2 = tempDir();
    const stereo = new FakeAnalyzer();
    stereo.info = { sampleRate: 16000, channels: 2, frames: 16000 * 40, durationSec: 40, format: 'WAV', subtype: 'PCM_16' };
    const s2 = await startServer(dir2.path, { analyzer: stereo, config: { limits: { maxAudioDurationSec: 60 } } });
    try {
      const both = await created(await createJob(s2, KEY_A, {}));
      const done = await waitForJob(s2, KEY_A, both.job_id);
      assert.equal(done.error?.code, 'DURATION_LIMIT_EXCEEDED');
      assert.equal(done.audio?.processed_channels, 2);
      // One channel of the same file is within the limit.
      const one = await created(await createJob(s2, KEY_A, { query: 'models=speech&output_period=1024&channel=1' }));
      assert.equal((await waitForJob(s2, KEY_A, one.job_id)).status, 'succeeded');
    } finally {
      await s2.close();
      dir2.cleanup();
    }
  });
});

describe('URL method (plain download until the signed-download issue)', () => {
  const dir = tempDir();
  let server: AurisServer;
  const analyzer = new FakeAnalyzer();
  let host: ReturnType<typeof createHttpServer>;
  let base = '';
  let seen: string[] = [];

  before(async () => {
    host = createHttpServer((req, res) => {
      seen.push(req.url ?? '');
      if (req.url === '/a.wav') res.writeHead(200, { 'content-type': 'audio/wav' }).end(Buffer.alloc(3000, 1));
      else if (req.url === '/big.wav') res.writeHead(200, { 'content-type': 'audio/wav' }).end(Buffer.alloc(50_000, 1));
      else if (req.url === '/slow.wav') {
        res.writeHead(200, { 'content-type': 'audio/wav' });
        res.write(Buffer.alloc(10));
        setTimeout(() => res.end(), 3000).unref();
      } else res.writeHead(404).end();
    });
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
    server = await startServer(dir.path, { analyzer, config: { limits: { maxDownloadBytes: 20_000, downloadTimeoutMs: 500 } } });
  });
  after(async () => {
    await server.close();
    host.closeAllConnections();
    host.close();
    dir.cleanup();
  });

  it('downloads the file, analyses it, records the size, keeps nothing', async () => {
    seen = [];
    const job = await created(await createJob(server, KEY_A, { url: `${base}/a.wav` }));
    const done = await waitForJob(server, KEY_A, job.job_id);
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    assert.equal(done.source.size_bytes, 3000);
    assert.deepEqual(seen, ['/a.wav']);
    assert.ok('path' in analyzer.calls.at(-1)!.source);
    assert.deepEqual((await server.backends.blobs.keys()).filter((k) => k.includes(job.job_id)), [`results/${job.job_id}.json`]);
  });

  it('fails with DOWNLOAD_FAILED (HTTP status), DOWNLOAD_TOO_LARGE and DOWNLOAD_TIMEOUT', async () => {
    const cases: Array<[string, string, RegExp]> = [
      ['/missing.wav', 'DOWNLOAD_FAILED', /404/],
      ['/big.wav', 'DOWNLOAD_TOO_LARGE', /20000/],
      ['/slow.wav', 'DOWNLOAD_TIMEOUT', /500 ms/],
    ];
    for (const [path, code, msg] of cases) {
      const job = await created(await createJob(server, KEY_A, { url: base + path }));
      const done = await waitForJob(server, KEY_A, job.job_id);
      assert.equal(done.error?.code, code);
      assert.match(done.error!.message, msg);
    }
    const refused = await created(await createJob(server, KEY_A, { url: 'http://127.0.0.1:1/x.wav' }));
    assert.equal((await waitForJob(server, KEY_A, refused.job_id)).error?.code, 'DOWNLOAD_FAILED');
  });
});

describe('retention and metrics', () => {
  it('purges finished jobs and results after the retention time', async () => {
    const dir = tempDir();
    const analyzer = new FakeAnalyzer();
    const server = await startServer(dir.path, { analyzer, config: { retentionSec: 1, sweepIntervalMs: 100, concurrency: 1 } });
    try {
      const job = await created(await createJob(server, KEY_A, {}));
      const done = await waitForJob(server, KEY_A, job.job_id);
      assert.equal(Date.parse(done.expires_at!) - Date.parse(done.finished_at!), 1000);
      assert.equal((await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}/results`)).status, 200);
      await waitFor(async () => (await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`)).status === 404, 5000, 'purge');
      assert.equal((await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}/results`)).status, 404);
      await waitFor(async () => (await server.backends.blobs.keys()).length === 0, 5000, 'results blob removed');
      // Neither a processing nor a queued job is purged however old: with one worker held by a
      // gated job, the second job really waits in the queue through a dozen sweeps.
      analyzer.gated = true;
      const running = await created(await createJob(server, KEY_A, {}));
      await waitForJob(server, KEY_A, running.job_id, (j) => j.status === 'processing');
      const queued = await created(await createJob(server, KEY_A, {}));
      await sleep(1300);
      const get = async (id: string): Promise<JobJson> => {
        const res = await api(server, KEY_A)(`/file-processing/jobs/${id}`);
        assert.equal(res.status, 200, `job ${id} is still there`);
        return (await res.json()) as JobJson;
      };
      assert.equal((await get(running.job_id)).status, 'processing');
      assert.equal((await get(queued.job_id)).status, 'queued');
      analyzer.gated = false;
      analyzer.release();
      assert.equal((await waitForJob(server, KEY_A, queued.job_id)).status, 'succeeded');
    } finally {
      await server.close();
      dir.cleanup();
    }
  });

  it('serves /healthz, /readyz and Prometheus /metrics with job, processing, audio and callback series', async () => {
    const dir = tempDir();
    const analyzer = new FakeAnalyzer();
    const server = await startServer(dir.path, { analyzer });
    try {
      const job = await created(await createJob(server, KEY_A, {}));
      await waitForJob(server, KEY_A, job.job_id);
      const health = await fetch(`${server.url}/healthz`);
      assert.equal(health.status, 200);
      const ready = await fetch(`${server.url}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(((await ready.json()) as { models: string[] }).models, ['speech', 'arousal', 'gender']);
      // The worker records its metrics just after the job record says succeeded (processing seconds last).
      let res = await fetch(`${server.url}/metrics`);
      let text = await res.text();
      for (let i = 0; i < 100 && !/auris_job_processing_seconds_count 1/.test(text); i++) {
        await sleep(50);
        res = await fetch(`${server.url}/metrics`);
        text = await res.text();
      }
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
      assert.match(text, /auris_jobs\{status="succeeded"\} 1/);
      assert.match(text, /auris_jobs\{status="queued"\} 0/);
      assert.match(text, /auris_job_processing_seconds_count 1/);
      assert.match(text, /auris_audio_seconds_processed_total 2/);
      assert.match(text, /auris_callback_attempts_total/);
      assert.match(text, /auris_jobs_finished_total\{status="succeeded",code=""\} 1/);
    } finally {
      await server.close();
      dir.cleanup();
    }
  });

  it('/readyz is 503 without models', async () => {
    const dir = tempDir();
    const analyzer = new FakeAnalyzer();
    analyzer.models = [];
    const server = await startServer(dir.path, { analyzer });
    try {
      const res = await fetch(`${server.url}/readyz`);
      assert.equal(res.status, 503);
      assert.equal(((await res.json()) as { code: string }).code, 'SERVICE_UNAVAILABLE');
    } finally {
      await server.close();
      dir.cleanup();
    }
  });
});
