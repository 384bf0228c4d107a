/**
 * Durability of the embedded default: queued, interrupted and finished jobs and pending
 * callbacks survive a restart of the server (graceful) and a crash (the data directory
 * as it is at an arbitrary instant, copied while a job runs).
 */
import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import { describe, it } from 'node:test';
import { EVENT_ID_HEADER } from '../../src/callbacks/dispatcher';
import { api, createJob, FakeAnalyzer, KEY_A, KEY_B, startReceiver, startServer, tempDir, waitFor, waitForJob, type JobJson } from './helpers';

async function created(res: Response): Promise<JobJson> {
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()) as JobJson;
}

describe('restart', () => {
  it('a queued job is processed after a restart, and a finished job is still served after another', async () => {
    const dir = tempDir();
    try {
      const s1 = await startServer(dir.path, { analyzer: new FakeAnalyzer(), startWorker: false });
      const queued = await created(await createJob(s1, KEY_A, { query: 'models=speech,arousal&output_period=2048&include_transitions=true' }));
      const other = await created(await createJob(s1, KEY_B, {}));
      await s1.close();

      const analyzer = new FakeAnalyzer();
      const s2 = await startServer(dir.path, { analyzer });
      const done = await waitForJob(s2, KEY_A, queued.job_id);
      assert.equal(done.status, 'succeeded');
      assert.deepEqual(done.request, queued.request);
      assert.equal(done.created_at, queued.created_at);
      assert.ok(analyzer.calls.some((c) => c.options.models.join() === 'speech,arousal'));
      assert.equal((await waitForJob(s2, KEY_B, other.job_id)).status, 'succeeded');
      const results1 = await (await api(s2, KEY_A)(`/file-processing/jobs/${queued.job_id}/results`)).text();
      await s2.close();

      const s3 = await startServer(dir.path, { analyzer: new FakeAnalyzer() });
      try {
        const again = await api(s3, KEY_A)(`/file-processing/jobs/${queued.job_id}`);
        assert.equal(again.status, 200);
        assert.deepEqual(await again.json(), done);
        const res = await api(s3, KEY_A)(`/file-processing/jobs/${queued.job_id}/results`);
        assert.equal(res.status, 200);
        assert.equal(await res.text(), results1);
        assert.equal((await api(s3, KEY_B)(`/file-processing/jobs/${queued.job_id}`)).status, 404, 'isolation survives the restart');
      } finally {
        await s3.close();
      }
    } finally {
      dir.cleanup();
    }
  });

  it('a job interrupted by a graceful shutdown runs again on the next start', async () => {
    const dir = tempDir();
    try {
      const a1 = new FakeAnalyzer();
      a1.gated = true;
      const s1 = await startServer(dir.path, { analyzer: a1 });
      const job = await created(await createJob(s1, KEY_A, {}));
      await waitForJob(s1, KEY_A, job.job_id, (j) => j.status === 'processing');
      await s1.close();
      assert.equal(a1.running, 0, 'the analysis was stopped');

      const s2 = await startServer(dir.path, { analyzer: new FakeAnalyzer() });
      try {
        const done = await waitForJob(s2, KEY_A, job.job_id);
        assert.equal(done.status, 'succeeded');
        assert.equal((await s2.backends.jobs.get(job.job_id))!.value.attempts, 2);
      } finally {
        await s2.close();
      }
    } finally {
      dir.cleanup();
    }
  });

  it('after a crash in the middle of a job (data directory as it was), the job is picked up and finished', async () => {
    const dir = tempDir();
    const crashed = tempDir();
    try {
      const a1 = new FakeAnalyzer();
      a1.gated = true;
      const s1 = await startServer(dir.path, { analyzer: a1 });
      const running = await created(await createJob(s1, KEY_A, {}));
      await waitForJob(s1, KEY_A, running.job_id, (j) => j.status === 'processing');
      await waitFor(() => a1.waiting === 1, 5000, 'the analysis to be under way');
      const queued = await created(await createJob(s1, KEY_A, {}));
      cpSync(dir.path, crashed.path, { recursive: true }); // the disk at the instant of the crash
      a1.gated = false;
      a1.release();
      await s1.close();

      const s2 = await startServer(crashed.path, { analyzer: new FakeAnalyzer() });
      try {
        assert.equal((await waitForJob(s2, KEY_A, running.job_id)).status, 'succeeded');
        assert.equal((await waitForJob(s2, KEY_A, queued.job_id)).status, 'succeeded');
      } finally {
        await s2.close();
      }
    } finally {
      dir.cleanup();
      crashed.cleanup();
    }
  });

  it('a job that keeps getting interrupted fails with JOB_INTERRUPTED after max attempts', async () => {
    const dir = tempDir();
    try {
      const a1 = new FakeAnalyzer();
      a1.gated = true;
      const s1 = await startServer(dir.path, { analyzer: a1, config: { maxJobAttempts: 1 } });
      const job = await created(await createJob(s1, KEY_A, {}));
      await waitForJob(s1, KEY_A, job.job_id, (j) => j.status === 'processing');
      await s1.close();
      const s2 = await startServer(dir.path, { analyzer: new FakeAnalyzer(), config: { maxJobAttempts: 1 } });
      try {
        const done = await waitForJob(s2, KEY_A, job.job_id);
        assert.equal(done.status, 'failed');
        assert.equal(done.error?.code, 'JOB_INTERRUPTED');
      } finally {
        await s2.close();
      }
    } finally {
      dir.cleanup();
    }
  });

  it('a callback not yet delivered is delivered after a restart', async () => {
    const dir = tempDir();
    const rx = await startReceiver(() => 200);
    try {
      const s1 = await startServer(dir.path, { analyzer: new FakeAnalyzer(), startDispatcher: false });
      const job = await created(await createJob(s1, KEY_A, { query: `models=speech&output_period=1024&callback=${encodeURIComponent(rx.url)}` }));
      const done = await waitForJob(s1, KEY_A, job.job_id);
      await s1.close();
      assert.equal(rx.received.length, 0);

      const s2 = await startServer(dir.path, { analyzer: new FakeAnalyzer() });
      try {
        await waitFor(() => rx.received.length === 1, 10_000, 'callback after restart');
        assert.equal(rx.received[0]!.body, JSON.stringify(done), 'the record when it finished (callback pending)');
        assert.ok(rx.received[0]!.headers[EVENT_ID_HEADER]);
      } finally {
        await s2.close();
      }
    } finally {
      await rx.close();
      dir.cleanup();
    }
  });
});
