/**
 * The package's typed REST client (src/client) and `auris jobs` (the CLI on top of it)
 * against a real server: create from a buffer, a file and a URL, wait with progress, results,
 * list, delete, idempotent retries, and errors as typed objects carrying `code`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { AurisApiError, AurisClient, type JobRecord } from '../../src';
import type { AurisServer } from '../../src/http/server';
import { fakeWav, FakeAnalyzer, KEY_A, startServer, tempDir } from './helpers';

const CLI = resolve(__dirname, '..', '..', 'src', 'cli', 'main.js');

describe('AurisClient', () => {
  const dir = tempDir();
  const analyzer = new FakeAnalyzer();
  let server: AurisServer;
  let client: AurisClient;
  const params = { models: ['speech', 'gender'], output_period: 512, include_summary: false };

  before(async () => {
    server = await startServer(dir.path, { analyzer });
    client = new AurisClient({ baseUrl: server.url + '/', apiKey: KEY_A });
  });
  after(async () => {
    analyzer.gated = false;
    analyzer.release();
    await server.close();
    dir.cleanup();
  });

  it('creates from bytes, waits reporting progress, reads results, deletes', async () => {
    analyzer.gated = true;
    const job = await client.createJob({ data: fakeWav(), contentType: 'audio/wav' }, params, { metadata: { ref: 'r1' } });
    assert.equal(job.status, 'queued');
    assert.deepEqual(job.metadata, { ref: 'r1' });
    const seen: Array<[string, number]> = [];
    const releaser = setInterval(() => analyzer.release(), 30);
    let done: JobRecord;
    try {
      done = await client.waitForJob(job.job_id, { intervalMs: 10, onProgress: (j) => seen.push([j.status, j.progress]) });
    } finally {
      clearInterval(releaser);
      analyzer.gated = false;
    }
    assert.equal(done.status, 'succeeded');
    assert.deepEqual(seen.at(-1), ['succeeded', 1]);
    assert.ok(seen.length >= 2, JSON.stringify(seen));
    const results = await client.getResults(job.job_id);
    assert.equal(results.job_id, job.job_id);
    assert.equal(results.result.channels['0']!.time_series[1]!.timestamp, 512);
    await client.deleteJob(job.job_id);
    await assert.rejects(client.getJob(job.job_id), (e: AurisApiError) => e instanceof AurisApiError && e.code === 'JOB_NOT_FOUND' && e.status === 404);
  });

  it('creates from a file (content type from the extension) and from a URL the service downloads', async () => {
    const path = join(dir.path, 'talk.flac');
    writeFileSync(path, fakeWav());
    const fromFile = await client.createJob({ file: path }, params);
    assert.equal(fromFile.source.content_type, 'audio/flac');
    const host = createHttpServer((_req, res) => res.writeHead(200, { 'content-type': 'audio/wav' }).end(fakeWav()));
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(host.address() as AddressInfo).port}/a.wav`;
      const fromUrl = await client.createJob({ url }, params, { metadata: { via: 'url' } });
      assert.equal(fromUrl.source.url, url);
      assert.deepEqual(fromUrl.metadata, { via: 'url' });
      assert.equal((await client.waitForJob(fromUrl.job_id, { intervalMs: 20 })).status, 'succeeded');
    } finally {
      host.close();
    }
    assert.equal((await client.waitForJob(fromFile.job_id, { intervalMs: 20 })).status, 'succeeded');
  });

  it('an idempotency key makes a retried creation return the same job', async () => {
    const key = `client-${Date.now()}`;
    const a = await client.createJob({ data: fakeWav(2000) }, params, { idempotencyKey: key });
    const b = await client.createJob({ data: fakeWav(2000) }, params, { idempotencyKey: key });
    assert.equal(a.job_id, b.job_id);
    await assert.rejects(client.createJob({ data: fakeWav(3000) }, params, { idempotencyKey: key }), (e: AurisApiError) => e.code === 'IDEMPOTENCY_CONFLICT' && e.problem.job_id === a.job_id);
  });

  it('lists page by page (allJobs follows the cursor) and lists the models', async () => {
    const page = await client.listJobs({ limit: 2 });
    assert.equal(page.jobs.length, 2);
    assert.ok(page.next_cursor);
    const all: string[] = [];
    for await (const j of client.allJobs({ limit: 1 })) all.push(j.job_id);
    assert.equal(new Set(all).size, all.length);
    assert.ok(all.length >= 3);
    assert.deepEqual(all.slice(0, 2), page.jobs.map((j) => j.job_id));
    const models = await client.listModels();
    assert.ok(models.models.some((m) => m.name === 'speech'));
  });

  it('errors are AurisApiError with the problem code (UNKNOWN_MODEL with valid_models, INVALID_API_KEY)', async () => {
    await assert.rejects(client.createJob({ data: fakeWav() }, { models: ['nope'], output_period: 1024 }), (e: AurisApiError) => {
      assert.equal(e.code, 'UNKNOWN_MODEL');
      assert.equal(e.status, 400);
      assert.ok(Array.isArray(e.problem.valid_models));
      return true;
    });
    const bad = new AurisClient({ baseUrl: server.url, apiKey: 'wrong-key-0000' });
    await assert.rejects(bad.listJobs(), (e: AurisApiError) => e.code === 'INVALID_API_KEY');
  });

  it('auris jobs submit prints the results; list prints one record per line; errors exit 1 with the code', async () => {
    const path = join(dir.path, 'cli.wav');
    writeFileSync(path, fakeWav());
    const env = { ...process.env, AURIS_API_KEY: KEY_A, AURIS_URL: server.url };
    const run = promisify(execFile);
    const { stdout } = await run(process.execPath, [CLI, 'jobs', 'submit', path, '--models', 'speech', '--output-period', '256', '--metadata', 'a=b'], { env });
    const results = JSON.parse(stdout) as { job_id: string; result: { channels: Record<string, { time_series: Array<{ timestamp: number }> }> } };
    assert.equal(results.result.channels['0']!.time_series[1]!.timestamp, 256);
    const job = await client.getJob(results.job_id);
    assert.deepEqual(job.metadata, { a: 'b' });
    const list = await run(process.execPath, [CLI, 'jobs', 'list', '--limit', '2'], { env });
    const lines = list.stdout.trim().split('\n').map((l) => JSON.parse(l) as JobRecord);
    assert.equal(lines[0]!.job_id, results.job_id);
    await assert.rejects(run(process.execPath, [CLI, 'jobs', 'submit', path, '--models', 'nope'], { env }), (e: { code: number; stderr: string }) => {
      assert.equal(e.code, 1);
      assert.match(e.stderr, /\[UNKNOWN_MODEL\]/);
      return true;
    });
  });
});
