/**
 * The behavioural suite of the four backend interfaces (JobStore, JobQueue, BlobStore,
 * EventBus) and of the service on top of them. It runs unchanged against every
 * implementation: test/jobs/embedded-behaviour.test.ts (local disk) and
 * test/nats/behaviour.test.ts (NATS JetStream). Only what callers can observe is
 * asserted, so both implementations must behave the same.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { AurisServer } from '../../src/http/server';
import {
  AlreadyExistsError,
  type Backends,
  BlobTooLargeError,
  type EventDelivery,
  type JobFinishedEvent,
  type QueueMessage,
  RevisionConflictError,
  type StoredJob,
} from '../../src/jobs/types';
import { api, assertCallbackBodyIsRecord, createJob, fakeWav, FakeAnalyzer, KEY_A, KEY_B, startReceiver, startServer, tempDir, waitFor, waitForJob, type JobJson } from '../http/helpers';

export interface BackendHarness {
  /**
   * Opens the backends on storage that lives until cleanup(): a second open() after a
   * close() (or without one: a crash) sees what the first one stored.
   */
  open(): Promise<Backends>;
  cleanup(): Promise<void>;
}

export function newJob(overrides: Partial<StoredJob['record']> = {}, owner = { organization_id: 'org-a', project_id: 'proj-a', key_id: 'k1' }): StoredJob {
  const job_id = randomUUID();
  return {
    record: {
      job_id,
      status: 'queued',
      progress: 0,
      created_at: new Date().toISOString(),
      started_at: null,
      finished_at: null,
      expires_at: null,
      request: {
        models: ['speech'],
        output_period: 1024,
        channel: null,
        include_summary: false,
        include_transitions: false,
        include_raw_values: false,
        volume_threshold: null,
        callback: null,
      },
      source: { method: 'upload', url: null, content_type: 'audio/wav', size_bytes: 10 },
      audio: null,
      results_url: null,
      results_size_bytes: null,
      error: null,
      metadata: null,
      callback: null,
      warnings: [],
      ...overrides,
    },
    owner,
    attempts: 0,
    upload_blob: null,
    results_blob: null,
    event_id: null,
  };
}

function event(jobId = randomUUID(), callback: string | null = null): JobFinishedEvent {
  const job = newJob({ job_id: jobId, status: 'succeeded', progress: 1, finished_at: new Date().toISOString() });
  return { type: 'job.finished', event_id: randomUUID(), job_id: jobId, occurred_at: new Date().toISOString(), record: job.record, callback };
}

/** Pulls with a deadline: the next message, or null if none came within `ms`. */
async function pullWithin(b: Backends, ms: number): Promise<QueueMessage | null> {
  // A timer that holds the event loop open (AbortSignal.timeout's does not).
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  try {
    return await b.queue.pull(controller.signal);
  } finally {
    clearTimeout(timer);
  }
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

export function backendBehaviour(name: string, harness: () => BackendHarness, opts: { skip?: string | false } = {}): void {
  describe(`backend behaviour: ${name}`, { skip: opts.skip || false }, () => {
    let h: BackendHarness;
    let b: Backends;

    before(async () => {
      h = harness();
      b = await h.open();
    });
    after(async () => {
      await b?.close();
      await h?.cleanup();
    });

    describe('JobStore', () => {
      it('creates, reads and refuses a second create of the same id', async () => {
        const job = newJob();
        const rev = await b.jobs.create(job);
        const got = await b.jobs.get(job.record.job_id);
        assert.ok(got);
        assert.deepEqual(got.value, job);
        assert.equal(got.revision, rev);
        await assert.rejects(b.jobs.create(job), AlreadyExistsError);
        assert.equal(await b.jobs.get(randomUUID()), null);
      });

      it('updates only at the current revision; of two writers at the same revision exactly one wins', async () => {
        const job = newJob();
        const r1 = await b.jobs.create(job);
        job.record.status = 'processing';
        const r2 = await b.jobs.update(job, r1);
        assert.notEqual(r2, r1);
        await assert.rejects(b.jobs.update(job, r1), RevisionConflictError);
        const a = structuredClone(job);
        a.record.status = 'succeeded';
        const c = structuredClone(job);
        c.record.status = 'failed';
        const results = await Promise.allSettled([b.jobs.update(a, r2), b.jobs.update(c, r2)]);
        assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
        const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
        assert.ok(rejected.reason instanceof RevisionConflictError);
        const final = await b.jobs.get(job.record.job_id);
        const winner = results[0]!.status === 'fulfilled' ? 'succeeded' : 'failed';
        assert.equal(final?.value.record.status, winner);
      });

      it('deletes (true once), after which reads are null and updates conflict', async () => {
        const job = newJob();
        const r = await b.jobs.create(job);
        assert.equal(await b.jobs.delete(job.record.job_id), true);
        assert.equal(await b.jobs.get(job.record.job_id), null);
        assert.equal(await b.jobs.delete(job.record.job_id), false);
        await assert.rejects(b.jobs.update(job, r), RevisionConflictError);
      });

      it('lists every job, without deleted ones', async () => {
        const kept = newJob();
        const gone = newJob();
        await b.jobs.create(kept);
        await b.jobs.create(gone);
        await b.jobs.delete(gone.record.job_id);
        const ids = await waitFor(async () => {
          const list = (await b.jobs.list()).map((j) => j.record.job_id);
          return list.includes(kept.record.job_id) && !list.includes(gone.record.job_id) ? list : null;
        }, 5000, 'list');
        assert.ok(ids.includes(kept.record.job_id));
      });
      it('a stored record with a wrongly typed field (warnings, metadata, callback) is not handed out after a reopen; the valid ones are', async () => {
        const good = newJob();
        const bad = [{ warnings: 'boom' }, { metadata: 5 }, { callback: 7 }, { callback: { url: 'http://x', state: 'lost', attempts: 0, last_status: null, last_error: null } }].map((field) =>
          newJob(field as unknown as Partial<StoredJob['record']>),
        );
        for (const j of [good, ...bad]) await b.jobs.create(j);
        const b2 = await h.open();
        try {
          for (const j of bad) assert.equal(await b2.jobs.get(j.record.job_id), null, JSON.stringify(j.record.warnings ?? j.record.metadata ?? j.record.callback));
          const ids = (await b2.jobs.list()).map((j) => j.record.job_id);
          assert.ok(ids.includes(good.record.job_id));
          for (const j of bad) assert.ok(!ids.includes(j.record.job_id));
          assert.deepEqual((await b2.jobs.get(good.record.job_id))?.value, good);
        } finally {
          await b2.close();
        }
      });
    });

    describe('JobQueue', () => {
      it('delivers an enqueued job once; acked, it is no longer pending', async () => {
        const id = randomUUID();
        await b.queue.enqueue(id);
        await b.queue.enqueue(id); // idempotent while queued
        assert.ok((await b.queue.pending()).includes(id));
        const m = await pullWithin(b, 5000);
        assert.ok(m);
        assert.equal(m.jobId, id);
        assert.equal(m.deliveryCount, 1);
        assert.ok((await b.queue.pending()).includes(id), 'in flight counts as pending');
        await m.working();
        await m.ack();
        assert.ok(!(await b.queue.pending()).includes(id));
        assert.equal(await pullWithin(b, 1500), null, 'the duplicate enqueue delivered nothing');
      });

      it('delivers in enqueue order', async () => {
        const ids = [randomUUID(), randomUUID(), randomUUID()];
        for (const id of ids) await b.queue.enqueue(id);
        const got: string[] = [];
        for (let i = 0; i < ids.length; i++) {
          const m = await pullWithin(b, 5000);
          assert.ok(m);
          got.push(m.jobId);
          await m.ack();
        }
        assert.deepEqual(got, ids);
      });

      it('a waiting pull gets a job enqueued later; an aborted pull returns null', async () => {
        const id = randomUUID();
        const waiting = pullWithin(b, 10_000);
        await new Promise((r) => setTimeout(r, 200));
        await b.queue.enqueue(id);
        const m = await waiting;
        assert.equal(m?.jobId, id);
        await m!.ack();
        const controller = new AbortController();
        const p = b.queue.pull(controller.signal);
        setTimeout(() => controller.abort(), 100);
        assert.equal(await p, null);
      });

      it('a nak gives the job back: it is delivered again with a higher delivery count', async () => {
        const id = randomUUID();
        await b.queue.enqueue(id);
        const m1 = await pullWithin(b, 5000);
        assert.equal(m1?.jobId, id);
        await m1!.nak();
        const m2 = await pullWithin(b, 10_000);
        assert.equal(m2?.jobId, id);
        assert.equal(m2!.deliveryCount, 2);
        await m2!.ack();
      });

      it('a job in flight when the process stops is delivered again after a restart', async () => {
        const id = randomUUID();
        await b.queue.enqueue(id);
        const m = await pullWithin(b, 5000);
        assert.equal(m?.jobId, id);
        await b.close(); // not acked
        b = await h.open();
        const again = await pullWithin(b, 20_000);
        assert.equal(again?.jobId, id);
        await again!.ack();
      });
    });

    describe('BlobStore', () => {
      it('stores buffers and streams; reads them back as streams and as local files', async () => {
        const key = `results/${randomUUID()}.json`;
        assert.deepEqual(await b.blobs.put(key, '{"a":1}'), { size: 7 });
        const got = await b.blobs.getStream(key);
        assert.equal(got?.size, 7);
        assert.equal((await readAll(got!.stream)).toString(), '{"a":1}');
        await b.blobs.put(key, '{"a":22}'); // replaces
        assert.equal((await readAll((await b.blobs.getStream(key))!.stream)).toString(), '{"a":22}');

        const up = `uploads/${randomUUID()}`;
        const data = randomBytes(700_000);
        assert.deepEqual(await b.blobs.putStream(up, Readable.from([data.subarray(0, 300_000), data.subarray(300_000)]), { maxBytes: 700_000 }), { size: 700_000 });
        const file = await b.blobs.localFile(up);
        assert.ok(file);
        assert.equal(sha(await readFile(file.path)), sha(data));
        await file.release();
      });

      it('holds a 30 MB result', async () => {
        const key = `results/${randomUUID()}.json`;
        const big = Buffer.alloc(30 * 1024 * 1024, 'x');
        big.write('{"job_id":"', 0);
        assert.deepEqual(await b.blobs.put(key, big), { size: big.length });
        const got = await b.blobs.getStream(key);
        assert.equal(got?.size, big.length);
        assert.equal(sha(await readAll(got!.stream)), sha(big));
        await b.blobs.delete(key);
      });

      it('refuses a stream over maxBytes: nothing is kept and the source can still be drained', async () => {
        const key = `uploads/${randomUUID()}`;
        let produced = 0;
        const source = new Readable({
          read() {
            if (produced >= 40) return this.push(null);
            produced++;
            this.push(Buffer.alloc(64 * 1024, 1));
          },
        });
        await assert.rejects(b.blobs.putStream(key, source, { maxBytes: 1024 * 1024 }), BlobTooLargeError);
        assert.equal(await b.blobs.getStream(key), null);
        source.resume();
        await new Promise<void>((resolve, reject) => {
          if (source.readableEnded) return resolve();
          source.once('end', resolve);
          source.once('error', reject);
        });
        assert.equal(produced, 40);
      });

      it('deletes (twice is fine); missing keys read as null; keys() lists what is stored', async () => {
        const key = `uploads/${randomUUID()}`;
        await b.blobs.put(key, Buffer.from('abc'));
        assert.ok((await b.blobs.keys()).includes(key));
        await b.blobs.delete(key);
        await b.blobs.delete(key);
        assert.equal(await b.blobs.getStream(key), null);
        assert.equal(await b.blobs.localFile(key), null);
        assert.ok(!(await b.blobs.keys()).includes(key));
      });
    });

    describe('EventBus', () => {
      it('hands each published event to the subscriber once (a re-publish of the same id while pending is dropped)', async () => {
        const e = event();
        await b.events.publish(e);
        await b.events.publish(e);
        const seen: JobFinishedEvent[] = [];
        const sub = b.events.subscribe(async (d) => {
          seen.push(d.event);
          await d.ack();
        }, { concurrency: 4 });
        try {
          await waitFor(() => seen.some((s) => s.event_id === e.event_id), 10_000, 'event');
          await new Promise((r) => setTimeout(r, 1000));
          assert.equal(seen.filter((s) => s.event_id === e.event_id).length, 1);
          assert.deepEqual(seen.find((s) => s.event_id === e.event_id), e);
        } finally {
          await sub.stop();
        }
      });

      it('runs at most `concurrency` handlers at once', async () => {
        const events = Array.from({ length: 6 }, () => event());
        let running = 0;
        let peak = 0;
        const done = new Set<string>();
        const sub = b.events.subscribe(async (d) => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((r) => setTimeout(r, 150));
          running--;
          done.add(d.event.event_id);
          await d.ack();
        }, { concurrency: 2 });
        try {
          for (const e of events) await b.events.publish(e);
          await waitFor(() => events.every((e) => done.has(e.event_id)), 15_000, 'all events');
          assert.ok(peak <= 2, `peak ${peak}`);
        } finally {
          await sub.stop();
        }
      });

      it('an event not acked before a stop is handed out again after a restart', async () => {
        const e = event();
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const first: EventDelivery[] = [];
        b.events.subscribe(async (d) => {
          first.push(d);
          await gate; // stopped before it acks
        }, { concurrency: 1 });
        await b.events.publish(e);
        await waitFor(() => first.length > 0, 10_000, 'first delivery');
        const closing = b.close();
        release();
        await closing;
        b = await h.open();
        const again: JobFinishedEvent[] = [];
        const sub = b.events.subscribe(async (d) => {
          again.push(d.event);
          await d.ack();
        }, { concurrency: 1 });
        await waitFor(() => again.some((x) => x.event_id === e.event_id), 20_000, 'redelivery after restart');
        await sub.stop();
      });
    });
  });

  describe(`service behaviour: ${name}`, { skip: opts.skip || false }, () => {
    let h: BackendHarness;
    const dir = tempDir('auris-behaviour-');
    const analyzer = new FakeAnalyzer();
    let server: AurisServer;

    const start = async (): Promise<AurisServer> =>
      startServer(dir.path, { analyzer, backends: await h.open(), config: { concurrency: 2, retentionSec: 3600 } });

    before(async () => {
      h = harness();
      server = await start();
    });
    after(async () => {
      analyzer.gated = false;
      analyzer.release();
      await server?.close();
      await h?.cleanup();
      dir.cleanup();
    });

    it('serves projects round-robin (CONCURRENCY=1): one job of project B queued behind six of project A runs second (right after the one running), not seventh', async () => {
      const fair = harness();
      const fairDir = tempDir('auris-fair-');
      const gated = new FakeAnalyzer();
      gated.gated = true;
      const s = await startServer(fairDir.path, { analyzer: gated, backends: await fair.open(), config: { concurrency: 1 } });
      try {
        const ids: string[] = [];
        for (let i = 0; i < 6; i++) ids.push(((await (await createJob(s, KEY_A, {})).json()) as JobJson).job_id);
        const b = ((await (await createJob(s, KEY_B, {})).json()) as JobJson).job_id;
        // Every delivery is held by the worker before the first job may go on.
        await waitFor(() => gated.running === 1 && Object.values(s.worker.fair.heldByProject()).reduce((x, y) => x + y, 0) === 6, 10_000, 'six held');
        await waitFor(async () => {
          gated.release();
          const status = async (key: string, id: string): Promise<string> => ((await (await api(s, key)(`/file-processing/jobs/${id}`)).json()) as JobJson).status;
          const done = await Promise.all([status(KEY_B, b), ...ids.map((id) => status(KEY_A, id))]);
          return done.every((st) => st === 'succeeded') ? true : null;
        }, 30_000, 'all seven analysed');
        // One job at a time: the start times give the order they ran in.
        const started = async (key: string, id: string) => ({ id, at: ((await (await api(s, key)(`/file-processing/jobs/${id}`)).json()) as { started_at: string }).started_at });
        const runs = [...(await Promise.all(ids.map((id) => started(KEY_A, id)))), await started(KEY_B, b)].sort((x, y) => x.at.localeCompare(y.at));
        assert.equal(runs.findIndex((r) => r.id === b), 1, runs.map((r) => (r.id === b ? 'B' : 'A')).join(''));
      } finally {
        gated.gated = false;
        gated.release();
        await s.close();
        await fair.cleanup();
        fairDir.cleanup();
      }
    });

    it('runs an upload job to success: record, results, one callback with the record as body', async () => {
      const receiver = await startReceiver();
      try {
        const res = await createJob(server, KEY_A, { query: `models=speech,gender&output_period=512&callback=${encodeURIComponent(receiver.url)}` });
        assert.equal(res.status, 201);
        const job = (await res.json()) as JobJson;
        const done = await waitForJob(server, KEY_A, job.job_id);
        assert.equal(done.status, 'succeeded');
        assert.equal(done.progress, 1);
        assert.equal(done.results_url, `/file-processing/jobs/${job.job_id}/results`);
        const results = await api(server, KEY_A)(done.results_url!);
        assert.equal(results.status, 200);
        const body = (await results.json()) as { job_id: string; result: { channels: Record<string, { time_series: unknown[] }> } };
        assert.equal(body.job_id, job.job_id);
        assert.equal(body.result.channels['0']!.time_series.length, 2);
        await waitFor(() => receiver.received.length >= 1, 10_000, 'callback');
        const cb = receiver.received[0]!;
        assert.equal(cb.headers['x-auris-job-id'], job.job_id);
        assert.ok(cb.headers['x-auris-event-id']);
        const now = await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`);
        assertCallbackBodyIsRecord(cb.body, await now.text());
        assert.equal(await api(server, KEY_B)(`/file-processing/jobs/${job.job_id}`).then((r) => r.status), 404);
      } finally {
        await receiver.close();
      }
    });

    it('Idempotency-Key: the same upload again gives the same job (201, Idempotent-Replayed), another body 409, racing requests one job', async () => {
      const key = `idem-${randomUUID()}`;
      const post = (audio: Buffer, k = key, query = 'models=speech&output_period=1024') =>
        api(server, KEY_A)(`/file-processing/jobs?${query}`, { method: 'POST', headers: { 'content-type': 'audio/wav', 'idempotency-key': k }, body: audio });
      const audio = fakeWav(5000);
      const first = await post(audio);
      assert.equal(first.status, 201);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      const job = (await first.json()) as JobJson;
      const again = await post(audio);
      assert.equal(again.status, 201);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(((await again.json()) as JobJson).job_id, job.job_id);
      assert.equal(again.headers.get('location'), `/file-processing/jobs/${job.job_id}`);
      // Same key, other bytes / other parameters: a conflict naming the job; no job is created.
      const other = Buffer.from(audio);
      other[100] = 7;
      const conflict = await post(other);
      assert.equal(conflict.status, 409);
      const problem = (await conflict.json()) as { code: string; job_id: string };
      assert.equal(problem.code, 'IDEMPOTENCY_CONFLICT');
      assert.equal(problem.job_id, job.job_id);
      assert.equal((await post(audio, key, 'models=speech&output_period=512')).status, 409);
      // The key is per project: another project's same key is another job.
      const b = await api(server, KEY_B)('/file-processing/jobs?models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': 'audio/wav', 'idempotency-key': key }, body: audio });
      assert.equal(b.status, 201);
      assert.notEqual(((await b.json()) as JobJson).job_id, job.job_id);
      // Five at once with a fresh key: one job, every answer names it.
      const raceKey = `race-${randomUUID()}`;
      const answers = await Promise.all([1, 2, 3, 4, 5].map(() => post(audio, raceKey)));
      assert.deepEqual(answers.map((r) => r.status), [201, 201, 201, 201, 201]);
      const ids = new Set(await Promise.all(answers.map(async (r) => ((await r.json()) as JobJson).job_id)));
      assert.equal(ids.size, 1);
      const stored = (await server.backends.jobs.list()).filter((j) => ids.has(j.record.job_id));
      assert.equal(stored.length, 1);
      await waitForJob(server, KEY_A, [...ids][0]!);
      // Uploads of the losing requests are not left behind.
      const keys = await server.backends.blobs.keys();
      assert.equal(keys.filter((k) => k.startsWith(`uploads/${[...ids][0]}`)).length, 0);
    });

    it('Idempotency-Key on the URL method; an invalid key is a 400', async () => {
      const key = randomUUID();
      const post = (url: string) =>
        api(server, KEY_A)('/file-processing/jobs?models=speech&output_period=1024', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({ url }),
        });
      const a = (await (await post('http://127.0.0.1:9/a.wav')).json()) as JobJson;
      const b = await post('http://127.0.0.1:9/a.wav');
      assert.equal(((await b.json()) as JobJson).job_id, a.job_id);
      assert.equal((await post('http://127.0.0.1:9/b.wav')).status, 409);
      const bad = await api(server, KEY_A)('/file-processing/jobs?models=speech&output_period=1024', {
        method: 'POST',
        headers: { 'content-type': 'audio/wav', 'idempotency-key': 'x'.repeat(300) },
        body: fakeWav(),
      });
      assert.equal(bad.status, 400);
      await waitForJob(server, KEY_A, a.job_id);
    });

    it('metadata is stored, echoed in the record and the callback, and size-limited', async () => {
      const receiver = await startReceiver();
      try {
        const metadata = { customer: 'c-1042', 'episode.no': '17' };
        const q = `models=speech&output_period=1024&metadata=${encodeURIComponent(JSON.stringify(metadata))}&callback=${encodeURIComponent(receiver.url)}`;
        const res = await createJob(server, KEY_A, { query: q });
        assert.equal(res.status, 201);
        const job = (await res.json()) as JobJson & { metadata: unknown };
        assert.deepEqual(job.metadata, metadata);
        const done = (await waitForJob(server, KEY_A, job.job_id)) as JobJson & { metadata: unknown };
        assert.deepEqual(done.metadata, metadata);
        await waitFor(() => receiver.received.length >= 1, 10_000, 'callback');
        assert.deepEqual((JSON.parse(receiver.received[0]!.body) as { metadata: unknown }).metadata, metadata);
        // In the URL method's body too.
        const viaBody = await api(server, KEY_A)('/file-processing/jobs?models=speech&output_period=1024', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ url: 'http://127.0.0.1:9/x.wav', metadata: { k: 'v' } }),
        });
        assert.equal(viaBody.status, 201);
        const viaBodyJob = (await viaBody.json()) as JobJson & { metadata: unknown };
        assert.deepEqual(viaBodyJob.metadata, { k: 'v' });
        await waitForJob(server, KEY_A, viaBodyJob.job_id);
      } finally {
        await receiver.close();
      }
      const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
      for (const bad of [tooMany, { k: 'x'.repeat(513) }, { 'bad key': 'v' }, { k: 1 }, ['a'], 'text']) {
        const res = await createJob(server, KEY_A, { query: `models=speech&output_period=1024&metadata=${encodeURIComponent(JSON.stringify(bad))}` });
        assert.equal(res.status, 400, JSON.stringify(bad));
        const p = (await res.json()) as { code: string; detail: string };
        assert.equal(p.code, 'INVALID_PARAMETER');
        assert.match(p.detail, /^metadata: /);
      }
    });

    it('fails a job with the analysis error code and deletes its upload', async () => {
      analyzer.fail = Object.assign(new Error('bad audio'), { code: 'CORRUPT_AUDIO' });
      try {
        const job = (await (await createJob(server, KEY_A, {})).json()) as JobJson;
        const done = await waitForJob(server, KEY_A, job.job_id);
        assert.equal(done.status, 'failed');
        assert.equal(done.error?.code, 'CORRUPT_AUDIO');
        const upload = `uploads/${job.job_id}`;
        // The upload goes right after the job is marked failed.
        await waitFor(async () => (await server.backends.jobs.get(job.job_id))?.value.upload_blob === null, 5000, 'upload released');
        assert.equal(await server.backends.blobs.getStream(upload), null);
        const res = await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}/results`);
        assert.equal(res.status, 409);
      } finally {
        analyzer.fail = null;
      }
    });

    it('a job whose processing keeps throwing is delivered again up to the queue maximum, then fails with PROCESSING_FAILED and is acked', async () => {
      analyzer.fail = new RangeError('internal detail');
      const before = analyzer.calls.length; // no other job runs meanwhile
      try {
        const job = (await (await createJob(server, KEY_A, {})).json()) as JobJson;
        const done = await waitForJob(server, KEY_A, job.job_id, (j) => j.status === 'failed', 60_000);
        const max = server.backends.queue.maxDeliveries;
        assert.equal(done.error?.code, 'PROCESSING_FAILED');
        assert.match(done.error!.message, new RegExp(`${max} deliveries.*analysing the audio \\(RangeError\\)`));
        assert.equal(analyzer.calls.length - before, max, 'one analysis per delivery');
        await waitFor(async () => !(await server.backends.queue.pending()).includes(job.job_id), 10_000, 'queue entry acked');
      } finally {
        analyzer.fail = null;
      }
    });

    it('DELETE removes the job, its upload and its results', async () => {
      const job = (await (await createJob(server, KEY_A, {})).json()) as JobJson;
      await waitForJob(server, KEY_A, job.job_id);
      const stored = await server.backends.jobs.get(job.job_id);
      const resultsBlob = stored!.value.results_blob!;
      assert.ok(await server.backends.blobs.getStream(resultsBlob));
      const del = await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`, { method: 'DELETE' });
      assert.equal(del.status, 204);
      assert.equal(await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`).then((r) => r.status), 404);
      assert.equal(await server.backends.blobs.getStream(resultsBlob), null);
    });

    it('retention purges a finished job with its results once it expired, not before', async () => {
      const job = (await (await createJob(server, KEY_A, {})).json()) as JobJson;
      const done = await waitForJob(server, KEY_A, job.job_id);
      const resultsBlob = (await server.backends.jobs.get(job.job_id))!.value.results_blob!;
      await server.sweeper.sweep(Date.parse(done.expires_at!) - 1000);
      assert.equal(await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`).then((r) => r.status), 200);
      await server.sweeper.sweep(Date.parse(done.expires_at!) + 1000);
      assert.equal(await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}`).then((r) => r.status), 404);
      assert.equal(await server.backends.blobs.getStream(resultsBlob), null);
    });

    it('after a restart every job is readable and a job interrupted by the stop finishes', async () => {
      const finished = (await (await createJob(server, KEY_A, {})).json()) as JobJson;
      await waitForJob(server, KEY_A, finished.job_id);
      analyzer.gated = true;
      const running = (await (await createJob(server, KEY_A, {})).json()) as JobJson;
      await waitForJob(server, KEY_A, running.job_id, (j) => j.status === 'processing');
      await waitFor(() => analyzer.waiting >= 1, 5000, 'analyzer gate');
      const closing = server.close();
      analyzer.release();
      await closing;
      analyzer.gated = false;
      server = await start();
      const a = await waitForJob(server, KEY_A, finished.job_id);
      assert.equal(a.status, 'succeeded');
      const results = await api(server, KEY_A)(`/file-processing/jobs/${finished.job_id}/results`);
      assert.equal(results.status, 200);
      await results.arrayBuffer();
      const c = await waitForJob(server, KEY_A, running.job_id, undefined, 30_000);
      assert.equal(c.status, 'succeeded');
    });
  });
}
