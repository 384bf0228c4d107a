/**
 * Poison jobs and malformed storage (docs/reliability.md, "Poison jobs and storage faults"):
 * files written into a data directory before start, a job whose processing keeps throwing,
 * transient storage faults during a job, and the job store's copy staying what is on disk
 * when a write fails. Real servers on 127.0.0.1 with the fake analyzer.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { EmbeddedJobStore, openEmbeddedBackends } from '../../src/jobs/embedded';
import { api, createJob, FakeAnalyzer, type JobJson, KEY_A, startServer, tempDir, waitFor, waitForJob } from '../http/helpers';
import { newJob } from '../jobs/behaviour';

function writeJson(path: string, v: unknown): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, JSON.stringify(v));
}

/** Analyze calls made for one job (the fake analyzer records the audio path, which holds the job id). */
const callsFor = (analyzer: FakeAnalyzer, jobId: string): number => analyzer.calls.filter((c) => 'path' in c.source && c.source.path.includes(jobId)).length;

describe('poison jobs and malformed storage', () => {
  const dir = tempDir('auris-poison-');
  after(() => dir.cleanup());

  it('a record with missing fields and a queue entry without enqueued_at, found at start: set aside; the server serves and the valid job runs', async () => {
    const data = join(dir.path, 'files');
    const poison = randomUUID();
    writeJson(join(data, 'jobs', `${poison}.json`), { revision: 1, job: { record: { job_id: poison, status: 'queued' } } });
    writeJson(join(data, 'queue', `${poison}.json`), { job_id: poison, seq: 1, enqueued_at: new Date().toISOString() });
    const valid = newJob();
    const id = valid.record.job_id;
    valid.upload_blob = `uploads/${id}`;
    writeJson(join(data, 'jobs', `${id}.json`), { revision: 1, job: valid });
    mkdirSync(join(data, 'blobs', 'uploads'), { recursive: true });
    writeFileSync(join(data, 'blobs', 'uploads', id), 'RIFF....WAVE');
    writeJson(join(data, 'queue', `${id}.json`), { job_id: id, seq: 2 }); // no enqueued_at
    writeFileSync(join(data, 'queue', `${randomUUID()}.json`), 'null');
    // Complete records with one wrongly typed field each (these made the project's listing answer 500).
    const typed = [{ warnings: 'boom' }, { metadata: 5 }, { callback: 7 }].map((field) => {
      const j = newJob(field as never);
      writeJson(join(data, 'jobs', `${j.record.job_id}.json`), { revision: 1, job: j });
      return j.record.job_id;
    });

    const analyzer = new FakeAnalyzer();
    const server = await startServer(data, { analyzer });
    try {
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
      assert.ok(existsSync(join(data, 'jobs', `${poison}.json.corrupt`)), 'poison record set aside');
      assert.ok(existsSync(join(data, 'queue', `${id}.json.corrupt`)), 'malformed queue entry set aside');
      assert.equal((await api(server, KEY_A)(`/file-processing/jobs/${poison}`)).status, 404);
      const list = await api(server, KEY_A)('/file-processing/jobs');
      assert.equal(list.status, 200, await list.clone().text());
      for (const t of typed) {
        assert.ok(existsSync(join(data, 'jobs', `${t}.json.corrupt`)), 'wrongly typed record set aside');
        assert.equal((await api(server, KEY_A)(`/file-processing/jobs/${t}`)).status, 404);
      }
      // The job whose queue entry was set aside is queued again by the start-up recovery.
      const done = await waitForJob(server, KEY_A, id);
      assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
      await waitFor(() => !existsSync(join(data, 'queue', `${poison}.json`)), 5000, 'the poison queue entry acked');
      await waitFor(async () => (await server.backends.queue.pending()).length === 0, 5000, 'every queue entry acked');
    } finally {
      await server.close();
    }
  });

  it('a queue entry or job record that is a symbolic link is not followed and its target never logged; a 50 MB entry is not read', async () => {
    const data = join(dir.path, 'links');
    const secret = join(dir.path, 'secret.txt');
    writeFileSync(secret, 'root:x:0:0:SECRET-CONTENT-4711:/root:/bin/bash\n');
    mkdirSync(join(data, 'queue'), { recursive: true });
    mkdirSync(join(data, 'jobs'), { recursive: true });
    const linked = randomUUID();
    symlinkSync(secret, join(data, 'queue', `${linked}.json`));
    const linkedRecord = randomUUID();
    symlinkSync(secret, join(data, 'jobs', `${linkedRecord}.json`));
    const big = randomUUID();
    writeFileSync(join(data, 'queue', `${big}.json`), '');
    truncateSync(join(data, 'queue', `${big}.json`), 50 * 1024 * 1024); // sparse: 50 MB of garbage
    const logs: string[] = [];
    const server = await startServer(data, { analyzer: new FakeAnalyzer(), logger: { level: 'warn', stream: { write: (l: string) => void logs.push(l) } } });
    try {
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
      const all = logs.join('');
      assert.doesNotMatch(all, /SECRET-CONTENT|root:x/, 'no content of the link target in the log');
      assert.match(all, new RegExp(`${linked}\\.json moved aside \\(unreadable: a symbolic link`));
      assert.match(all, new RegExp(`${big}\\.json moved aside \\(unreadable: 52428800 bytes, over the 65536-byte limit \\(not read\\)`));
      assert.ok(existsSync(join(data, 'queue', `${linked}.json.corrupt`)));
      assert.ok(existsSync(join(data, 'jobs', `${linkedRecord}.json.corrupt`)));
      assert.equal(readFileSync(secret, 'utf8').startsWith('root:x:0:0:SECRET'), true, 'the target is untouched');
    } finally {
      await server.close();
    }
  });

  it('a job whose processing keeps throwing is delivered again with backoff, then fails with PROCESSING_FAILED naming the cause; /healthz answers meanwhile', async () => {
    const analyzer = new FakeAnalyzer();
    analyzer.fail = new TypeError("Cannot read properties of undefined (reading 'secret')");
    const server = await startServer(join(dir.path, 'throwing'), { analyzer, config: { maxJobDeliveries: 3, jobRetryBackoffMs: 100 } });
    try {
      const res = await createJob(server, KEY_A, {});
      assert.equal(res.status, 201);
      const job = (await res.json()) as JobJson;
      // /healthz is asked all along the retries.
      const health: number[] = [];
      let finished = false;
      const probing = (async () => {
        while (!finished) {
          health.push((await fetch(`${server.url}/healthz`)).status);
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      const done = await waitForJob(server, KEY_A, job.job_id, (j) => j.status === 'failed', 30_000).finally(() => (finished = true));
      await probing;
      assert.ok(health.length >= 3, `healthz asked ${health.length} times`);
      assert.ok(health.every((s) => s === 200), String(health));
      assert.equal(done.error?.code, 'PROCESSING_FAILED');
      assert.match(done.error!.message, /3 deliveries/);
      assert.match(done.error!.message, /analysing the audio \(TypeError\)/);
      assert.doesNotMatch(done.error!.message, /secret/);
      assert.equal(callsFor(analyzer, job.job_id), 3, 'one analysis per delivery, no more');
      await waitFor(async () => (await server.backends.queue.pending()).length === 0, 5000, 'queue entry acked'); // acked right after the record is written
    } finally {
      await server.close();
    }
  });

  it('the delivery limit holds across restarts: failed deliveries are kept in the queue entry', async () => {
    const data = join(dir.path, 'restarted');
    const job = newJob();
    const id = job.record.job_id;
    job.upload_blob = `uploads/${id}`;
    writeJson(join(data, 'jobs', `${id}.json`), { revision: 1, job });
    mkdirSync(join(data, 'blobs', 'uploads'), { recursive: true });
    writeFileSync(join(data, 'blobs', 'uploads', id), 'RIFF....WAVE');
    // Two deliveries failed in an earlier process life.
    writeJson(join(data, 'queue', `${id}.json`), { job_id: id, seq: 1, enqueued_at: new Date().toISOString(), failed_deliveries: 2 });
    const analyzer = new FakeAnalyzer();
    analyzer.fail = new Error('still broken');
    const server = await startServer(data, { analyzer, config: { maxJobDeliveries: 3 } });
    try {
      const done = await waitForJob(server, KEY_A, id, (j) => j.status === 'failed', 30_000);
      assert.equal(done.error?.code, 'PROCESSING_FAILED');
      assert.match(done.error!.message, /3 deliveries/);
      assert.equal(callsFor(analyzer, id), 1, 'only the one delivery left');
    } finally {
      await server.close();
    }
  });

  it('a transient storage fault (ENOSPC, EIO) while storing results gives the job back: it succeeds later, the faults not counted as deliveries', async () => {
    const data = join(dir.path, 'transient');
    const backends = await openEmbeddedBackends(data, undefined, { maxDeliveries: 2 });
    const put = backends.blobs.put.bind(backends.blobs);
    const faults = ['ENOSPC', 'EIO', 'ENOSPC'];
    backends.blobs.put = async (key, body) => {
      const code = key.startsWith('results/') ? faults.shift() : undefined;
      if (code) throw Object.assign(new Error(`${code}: injected fault, write`), { code });
      return put(key, body);
    };
    const analyzer = new FakeAnalyzer();
    const server = await startServer(data, { analyzer, backends, config: { jobRetryBackoffMs: 20 } });
    try {
      const job = (await (await createJob(server, KEY_A, {})).json()) as JobJson;
      const done = await waitForJob(server, KEY_A, job.job_id, undefined, 30_000);
      assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
      assert.equal(faults.length, 0);
      assert.equal(callsFor(analyzer, job.job_id), 4, 'three faults, then the delivery that succeeded');
      assert.equal((await server.backends.jobs.get(job.job_id))!.value.attempts, 1, 'the given-back attempts do not count');
    } finally {
      await server.close();
    }
  });

  it('a disk that takes a probe but not a job (results write ENOSPC): /readyz is 503 naming it and the waiting job says why; both clear once a write succeeds', async () => {
    const data = join(dir.path, 'nearly-full');
    const backends = await openEmbeddedBackends(data, undefined, { maxDeliveries: 2 });
    const put = backends.blobs.put.bind(backends.blobs);
    let full = true;
    backends.blobs.put = async (key, body) => {
      if (full && key.startsWith('results/')) throw Object.assign(new Error('ENOSPC: injected fault, write'), { code: 'ENOSPC', syscall: 'write' });
      return put(key, body);
    };
    const server = await startServer(data, { analyzer: new FakeAnalyzer(), backends, config: { jobRetryBackoffMs: 200 } });
    try {
      const first = await fetch(`${server.url}/readyz`);
      assert.equal(first.status, 200, await first.text());
      const job = (await (await createJob(server, KEY_A, {})).json()) as JobJson;
      const ready = await waitFor(async () => {
        const r = await fetch(`${server.url}/readyz`);
        return r.status === 503 ? await r.text() : null;
      }, 10_000, '/readyz red');
      assert.match(ready, /ENOSPC/);
      const waiting = await waitFor(async () => {
        const j = (await (await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`)).json()) as JobJson & { warnings: Array<{ code: string; message: string }> };
        return j.status === 'queued' && j.warnings.length ? j : null;
      }, 10_000, 'the queued job to say why it waits');
      assert.equal(waiting.warnings[0]!.code, 'WAITING_FOR_STORAGE');
      assert.match(waiting.warnings[0]!.message, /ENOSPC/);
      const listed = (await (await api(server, KEY_A)('/file-processing/jobs')).json()) as { jobs: Array<{ job_id: string; warnings: Array<{ code: string }> }> };
      assert.ok(listed.jobs.find((j) => j.job_id === job.job_id)?.warnings.some((w) => w.code === 'WAITING_FOR_STORAGE'));
      full = false;
      const done = (await waitForJob(server, KEY_A, job.job_id, undefined, 30_000)) as JobJson & { warnings: unknown[] };
      assert.equal(done.status, 'succeeded');
      assert.deepEqual(done.warnings, []);
      await waitFor(async () => (await fetch(`${server.url}/readyz`)).status === 200, 10_000, '/readyz green again');
    } finally {
      await server.close();
    }
  });

  it('EmbeddedJobStore: a failed write leaves the stored copy and the file as they were', async () => {
    const jobsDir = join(dir.path, 'store', 'jobs');
    const store = await EmbeddedJobStore.open(jobsDir);
    const job = newJob();
    const id = job.record.job_id;
    const rev = await store.create(job);
    // A real write failure: the record's path becomes a non-empty folder, so the atomic rename fails.
    const path = join(jobsDir, `${id}.json`);
    rmSync(path);
    mkdirSync(join(path, 'x'), { recursive: true });
    const changed = structuredClone(job);
    changed.record.status = 'processing';
    await assert.rejects(store.update(changed, rev));
    const now = await store.get(id);
    assert.equal(now!.revision, rev);
    assert.equal(now!.value.record.status, 'queued', 'the copy did not change');
    // Once the path is writable again the same update goes through.
    rmSync(path, { recursive: true });
    assert.equal(await store.update(changed, rev), rev + 1);
    assert.equal((await store.get(id))!.value.record.status, 'processing');
  });
});
