/**
 * Job-finished callbacks against real local receivers (SPEC "Events"): 2xx success,
 * 5xx retried 3 times, other statuses not retried, timeouts, same event id on every
 * attempt, body = GET /file-processing/jobs/{jobId}, slow receivers block no one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ATTEMPT_HEADER, EVENT_ID_HEADER, JOB_ID_HEADER } from '../../src/callbacks/dispatcher';
import { defaultConfig, loadConfig } from '../../src/config';
import type { AurisServer } from '../../src/http/server';
import { api, createJob, FakeAnalyzer, KEY_A, sleep, startReceiver, startServer, tempDir, waitFor, waitForJob, type JobJson } from './helpers';

async function jobWithCallback(server: AurisServer, url: string): Promise<JobJson> {
  const res = await createJob(server, KEY_A, { query: `models=speech&output_period=1024&callback=${encodeURIComponent(url)}` });
  assert.equal(res.status, 201);
  return (await res.json()) as JobJson;
}

async function metric(server: AurisServer, line: RegExp): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const m = text.split('\n').find((l) => line.test(l));
  return m ? Number(m.split(' ').at(-1)) : 0;
}

describe('callbacks', () => {
  const dir = tempDir();
  let server: AurisServer;
  const analyzer = new FakeAnalyzer();

  before(async () => {
    server = await startServer(dir.path, { analyzer, config: { callbacks: { timeoutMs: 1000, backoffMs: 20 } } });
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  it('the default callback timeout is 10 s and 3 retries (spec), configurable by env and flag', () => {
    const d = defaultConfig();
    assert.equal(d.callbacks.timeoutMs, 10_000);
    assert.equal(d.callbacks.retries, 3);
    assert.equal(loadConfig([], { CALLBACK_TIMEOUT_MS: '2500' }).callbacks.timeoutMs, 2500);
    assert.equal(loadConfig(['--callback-timeout-ms', '1200'], { CALLBACK_TIMEOUT_MS: '2500' }).callbacks.timeoutMs, 1200);
  });

  it('200: one POST whose body is exactly GET /file-processing/jobs/{jobId}, with event id and attempt headers', async () => {
    const rx = await startReceiver(() => 200);
    try {
      const job = await jobWithCallback(server, rx.url);
      await waitFor(() => rx.received.length === 1, 10_000, 'callback');
      const got = rx.received[0]!;
      const get = await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`);
      assert.equal(got.body, await get.text(), 'callback body equals the GET body byte for byte');
      const body = JSON.parse(got.body) as JobJson;
      assert.equal(body.status, 'succeeded');
      assert.equal(got.headers['content-type'], 'application/json');
      assert.match(String(got.headers[EVENT_ID_HEADER]), /^[0-9a-f-]{36}$/);
      assert.equal(got.headers[ATTEMPT_HEADER], '1');
      assert.equal(got.headers[JOB_ID_HEADER], job.job_id);
      await sleep(200);
      assert.equal(rx.received.length, 1, 'no second delivery');
    } finally {
      await rx.close();
    }
  });

  it('a failed job also calls back, with the failed record', async () => {
    const rx = await startReceiver(() => 204);
    analyzer.fail = Object.assign(new Error('bad file'), { code: 'CORRUPT_AUDIO' });
    try {
      await jobWithCallback(server, rx.url);
      await waitFor(() => rx.received.length === 1, 10_000, 'callback');
      const body = JSON.parse(rx.received[0]!.body) as JobJson;
      assert.equal(body.status, 'failed');
      assert.equal(body.error?.code, 'CORRUPT_AUDIO');
    } finally {
      analyzer.fail = null;
      await rx.close();
    }
  });

  it('500: retried exactly 3 times (4 attempts), same event id, attempts numbered 1..4', async () => {
    const rx = await startReceiver(() => 500);
    const before = await metric(server, /^auris_callback_attempts_total\{outcome="server_error"\}/);
    try {
      await jobWithCallback(server, rx.url);
      await waitFor(() => rx.received.length === 4, 10_000, '4 attempts');
      await sleep(300);
      assert.equal(rx.received.length, 4);
      const ids = new Set(rx.received.map((r) => r.headers[EVENT_ID_HEADER]));
      assert.equal(ids.size, 1);
      assert.deepEqual(rx.received.map((r) => r.headers[ATTEMPT_HEADER]), ['1', '2', '3', '4']);
      assert.ok(new Set(rx.received.map((r) => r.body)).size === 1, 'same body on every attempt');
      assert.equal((await metric(server, /^auris_callback_attempts_total\{outcome="server_error"\}/)) - before, 4);
    } finally {
      await rx.close();
    }
  });

  it('a 5xx then 2xx stops retrying', async () => {
    const rx = await startReceiver((_r, n) => (n < 3 ? 503 : 200));
    try {
      await jobWithCallback(server, rx.url);
      await waitFor(() => rx.received.length === 3, 10_000, '3 attempts');
      await sleep(300);
      assert.equal(rx.received.length, 3);
    } finally {
      await rx.close();
    }
  });

  for (const status of [404, 400, 301, 410]) {
    it(`${status}: not retried`, async () => {
      const rx = await startReceiver(() => status);
      try {
        await jobWithCallback(server, rx.url);
        await waitFor(() => rx.received.length === 1, 10_000, 'callback');
        await sleep(300);
        assert.equal(rx.received.length, 1);
      } finally {
        await rx.close();
      }
    });
  }

  it('a receiver slower than the timeout counts as a failed attempt (timeout) and is retried; it blocks no other job', async () => {
    const slow = await startReceiver(() => sleep(3000).then(() => 200));
    const fast = await startReceiver(() => 200);
    const before = await metric(server, /^auris_callback_attempts_total\{outcome="timeout"\}/);
    try {
      await jobWithCallback(server, slow.url);
      await waitFor(() => slow.received.length === 1, 10_000, 'first slow attempt');
      // While the slow receiver hangs, another job's callback goes through at once.
      const t0 = Date.now();
      await jobWithCallback(server, fast.url);
      await waitFor(() => fast.received.length === 1, 10_000, 'fast callback');
      assert.ok(Date.now() - t0 < 900, 'not queued behind the slow callback');
      await waitFor(() => slow.received.length === 4, 15_000, '4 slow attempts');
      await waitFor(async () => (await metric(server, /^auris_callback_attempts_total\{outcome="timeout"\}/)) - before === 4, 5000, 'timeouts counted');
      assert.equal(new Set(slow.received.map((r) => r.headers[EVENT_ID_HEADER])).size, 1);
    } finally {
      await slow.close();
      await fast.close();
    }
  });

  it('an unreachable receiver is retried and then given up (network_error)', async () => {
    const rx = await startReceiver(() => 200);
    const url = rx.url;
    await rx.close();
    const before = await metric(server, /^auris_callback_attempts_total\{outcome="network_error"\}/);
    await jobWithCallback(server, url);
    await waitFor(async () => (await metric(server, /^auris_callback_attempts_total\{outcome="network_error"\}/)) - before === 4, 10_000, '4 failed attempts');
  });

  it('a job without callback sends nothing', async () => {
    const res = await createJob(server, KEY_A, {});
    const job = (await res.json()) as JobJson;
    await waitForJob(server, KEY_A, job.job_id);
  });
});
