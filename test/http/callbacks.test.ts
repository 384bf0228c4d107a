/**
 * Job-finished callbacks against real local receivers (SPEC "Events"): 2xx success,
 * 5xx retried 3 times, other statuses not retried, timeouts, same event id on every
 * attempt, body = GET /file-processing/jobs/{jobId}, slow receivers block no one, retries
 * back off exponentially, a job without callback sends nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ATTEMPT_HEADER, EVENT_ID_HEADER, JOB_ID_HEADER } from '../../src/callbacks/dispatcher';
import { defaultConfig, loadConfig } from '../../src/config';
import type { AurisServer } from '../../src/http/server';
import { api, assertCallbackBodyIsRecord, createJob, FakeAnalyzer, KEY_A, sleep, startReceiver, startServer, tempDir, waitFor, waitForJob, type JobJson } from './helpers';

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

/** The job's callback delivery state (null without callback). */
function callbackOf(job: JobJson): { state: string; attempts: number; last_status: number | null } | null {
  return (job as unknown as { callback: { state: string; attempts: number; last_status: number | null } | null }).callback;
}

/** The sum of a metric over all its label sets. */
async function metricSum(server: AurisServer, line: RegExp): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return text.split('\n').filter((l) => line.test(l)).reduce((s, l) => s + Number(l.split(' ').at(-1)), 0);
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
      assertCallbackBodyIsRecord(got.body, await get.text());
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

  it('a receiver slower than the timeout counts as a failed attempt (timeout) and is retried', async () => {
    const slow = await startReceiver(() => sleep(3000).then(() => 200));
    const before = await metric(server, /^auris_callback_attempts_total\{outcome="timeout"\}/);
    try {
      await jobWithCallback(server, slow.url);
      await waitFor(() => slow.received.length === 4, 15_000, '4 slow attempts');
      await waitFor(async () => (await metric(server, /^auris_callback_attempts_total\{outcome="timeout"\}/)) - before === 4, 5000, 'timeouts counted');
      assert.equal(new Set(slow.received.map((r) => r.headers[EVENT_ID_HEADER])).size, 1);
    } finally {
      await slow.close();
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

  it('a redirect is not followed: the 3xx is a final answer, the redirect target gets nothing', async () => {
    const target = await startReceiver(() => 200);
    const redirecting = await startReceiver(() => 302);
    redirecting.server.removeAllListeners('request');
    redirecting.server.on('request', (req, res) => {
      redirecting.received.push({ headers: req.headers, body: '', at: Date.now() });
      req.resume();
      res.writeHead(302, { location: target.url }).end();
    });
    try {
      const job = await jobWithCallback(server, redirecting.url);
      const done = await waitForJob(server, KEY_A, job.job_id, (j) => callbackOf(j)?.state !== undefined && callbackOf(j)?.state !== 'pending');
      assert.deepEqual([callbackOf(done)?.state, callbackOf(done)?.attempts, callbackOf(done)?.last_status], ['failed', 1, 302]);
      assert.equal(redirecting.received.length, 1, 'not retried');
      assert.equal(target.received.length, 0, 'the redirect was not followed');
    } finally {
      await target.close();
      await redirecting.close();
    }
  });

  it('no callback for a job deleted while it runs', async () => {
    const rx = await startReceiver(() => 200);
    const barrier = await startReceiver(() => 200);
    analyzer.gated = true;
    try {
      const job = await jobWithCallback(server, rx.url);
      await waitForJob(server, KEY_A, job.job_id, (j) => j.status === 'processing');
      assert.equal((await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`, { method: 'DELETE' })).status, 204);
      analyzer.gated = false;
      analyzer.release();
      // A later job's callback is the barrier: once it arrived, the deleted job had its chance.
      await jobWithCallback(server, barrier.url);
      await waitFor(() => barrier.received.length === 1, 10_000, 'the barrier callback');
      await sleep(200);
      assert.equal(rx.received.length, 0, 'the deleted job called back');
    } finally {
      analyzer.gated = false;
      analyzer.release();
      await rx.close();
      await barrier.close();
    }
  });

  it('a job without callback sends nothing: no attempt is counted (a fresh server, so no other job interferes)', async () => {
    const own = tempDir();
    const fresh = await startServer(own.path, { analyzer: new FakeAnalyzer() });
    const rx = await startReceiver(() => 200);
    try {
      const res = await createJob(fresh, KEY_A, {});
      const job = (await res.json()) as JobJson;
      assert.equal(callbackOf(job), null);
      assert.equal((await waitForJob(fresh, KEY_A, job.job_id)).status, 'succeeded');
      // A later job with a callback is the barrier: once its delivery is recorded, the event of
      // the job without callback (published before it) has been handled too.
      const barrier = await jobWithCallback(fresh, rx.url);
      await waitForJob(fresh, KEY_A, barrier.job_id, (j) => callbackOf(j)?.state === 'delivered');
      assert.equal(rx.received.length, 1);
      assert.equal(await metricSum(fresh, /^auris_callback_attempts_total\{/), 1, 'only the barrier job made an attempt');
      assert.equal(await metricSum(fresh, /^auris_callbacks_total\{/), 1, 'only the barrier job has a delivery outcome');
    } finally {
      await rx.close();
      await fresh.close();
      own.cleanup();
    }
  });
});

describe('callbacks: concurrency and backoff (long timeout, 200 ms backoff)', () => {
  const dir = tempDir();
  let server: AurisServer;

  before(async () => {
    server = await startServer(dir.path, { analyzer: new FakeAnalyzer(), config: { callbacks: { timeoutMs: 60_000, backoffMs: 200 } } });
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  it('a receiver that hangs blocks no other job: the next callback arrives while the first attempt is still open', async () => {
    let release!: () => void;
    const hanging = new Promise<number>((r) => (release = () => r(200)));
    const slow = await startReceiver(() => hanging);
    const fast = await startReceiver(() => 200);
    try {
      await jobWithCallback(server, slow.url);
      await waitFor(() => slow.received.length === 1, 10_000, 'the hanging attempt');
      await jobWithCallback(server, fast.url);
      await waitFor(() => fast.received.length === 1, 30_000, 'the other callback');
      // The hanging attempt has not been answered (the timeout is 60 s), so it was not retried.
      assert.equal(slow.received.length, 1);
      release();
      await waitFor(async () => (await metric(server, /^auris_callbacks_total\{outcome="delivered"\}/)) === 2, 10_000, 'both delivered');
      assert.equal(slow.received.length, 1, 'the late 200 counts: no retry');
    } finally {
      release();
      await slow.close();
      await fast.close();
    }
  });

  it('retries back off exponentially: the waits before attempts 2, 3 and 4 are at least 200, 400 and 800 ms', async () => {
    const rx = await startReceiver(() => 503);
    try {
      await jobWithCallback(server, rx.url);
      await waitFor(() => rx.received.length === 4, 20_000, '4 attempts');
      const gaps = rx.received.slice(1).map((r, i) => r.at - rx.received[i]!.at);
      // Lower bounds only (a timer never fires early; a busy machine only makes gaps longer):
      // a constant 200 ms backoff fails the third bound.
      gaps.forEach((g, i) => assert.ok(g >= 200 * 2 ** i - 5, `wait before attempt ${i + 2}: ${g} ms, gaps ${gaps.join(', ')}`));
    } finally {
      await rx.close();
    }
  });
});
