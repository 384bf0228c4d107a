/**
 * What only the JetStream implementation has: several nodes on one cluster, redelivery
 * when a worker vanishes, heartbeats, running out of deliveries, the documented stream
 * settings, NATS outages (fast BackendUnavailableError, recovery after a restart).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import type { NatsBackendOptions, NatsBackends } from '../../src/jobs/nats';
import { names } from '../../src/jobs/nats/settings';
import { BackendUnavailableError, BlobTooLargeError, type JobFinishedEvent, type QueueMessage, RevisionConflictError } from '../../src/jobs/types';
import { waitFor } from '../http/helpers';
import { newJob } from '../jobs/behaviour';
import { envSkip } from '../env';
import { useNatsServer } from './fixture';
import { natsUnavailable } from './server';

const skip = envSkip(natsUnavailable());

async function pullWithin(b: NatsBackends, ms: number): Promise<QueueMessage | null> {
  const c = new AbortController();
  const t = setTimeout(() => c.abort(), ms);
  try {
    return await b.queue.pull(c.signal);
  } finally {
    clearTimeout(t);
  }
}

describe('NATS JetStream backends', { skip }, () => {
  const nats = useNatsServer({ prefix: 'js', ackWaitMs: 1000, eventsAckWaitMs: 1000, orphanGraceMs: 0 });
  const node = (opts: Partial<NatsBackendOptions> = {}): Promise<NatsBackends> => nats.node(opts);

  it('creates the streams, consumer and buckets with the documented settings', async () => {
    const a = await node();
    const nm = names('js');
    const jobs = await a.conn.jsm.streams.info(nm.jobsStream);
    assert.equal(jobs.config.retention, 'workqueue');
    assert.equal(jobs.config.storage, 'file');
    assert.deepEqual(jobs.config.subjects, ['js.jobs.>']);
    const workers = await a.conn.jsm.consumers.info(nm.jobsStream, nm.workersConsumer);
    assert.equal(workers.config.ack_policy, 'explicit');
    assert.equal(workers.config.max_deliver, a.settings.maxDeliver);
    assert.equal(workers.config.ack_wait, 1000 * 1e6);
    assert.deepEqual(workers.config.backoff, [1000, 2000, 4000, 8000].map((ms) => ms * 1e6));
    const events = await a.conn.jsm.streams.info(nm.eventsStream);
    assert.equal(events.config.retention, 'workqueue');
    await a.conn.jsm.consumers.info(nm.eventsStream, nm.dispatchersConsumer);
    await a.conn.jsm.streams.info(nm.deadStream);
    const kv = await a.conn.jsm.streams.info(`KV_${nm.jobsBucket}`);
    assert.equal(kv.config.max_msgs_per_subject, 1);
    await a.conn.jsm.streams.info(`OBJ_${nm.blobsBucket}`);
    // A node started with other settings updates the consumer.
    const b = await node({ ackWaitMs: 1500 });
    const updated = await b.conn.jsm.consumers.info(nm.jobsStream, nm.workersConsumer);
    assert.equal(updated.config.ack_wait, 1500 * 1e6);
    await b.close();
    const c = await node();
    assert.equal((await c.conn.jsm.consumers.info(nm.jobsStream, nm.workersConsumer)).config.ack_wait, 1000 * 1e6);
  });

  it('two nodes: one job goes to exactly one puller; revision checks hold across nodes', async () => {
    const a = await node();
    const b = await node();
    const id = randomUUID();
    const pa = pullWithin(a, 3000);
    const pb = pullWithin(b, 3000);
    await a.queue.enqueue(id);
    const got = (await Promise.all([pa, pb])).filter((m): m is QueueMessage => m !== null);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.jobId, id);
    await got[0]!.ack();

    const job = newJob();
    const r1 = await a.jobs.create(job);
    const fromB = await b.jobs.get(job.record.job_id);
    assert.equal(fromB?.revision, r1);
    job.record.status = 'processing';
    await b.jobs.update(job, r1);
    await assert.rejects(a.jobs.update(job, r1), RevisionConflictError);
    await waitFor(async () => (await a.jobs.list()).find((j) => j.record.job_id === job.record.job_id)?.record.status === 'processing', 5000, 'watched copy');
  });

  it('a job held by a node that vanished (no ack, no nak) is delivered to another node after the ack wait', async () => {
    const a = await node();
    const b = await node();
    const id = randomUUID();
    await a.queue.enqueue(id);
    const m = await pullWithin(a, 5000);
    assert.equal(m?.jobId, id);
    await a.conn.nc.close(); // like a SIGKILL: the message is neither acked nor given back
    const again = await pullWithin(b, 15_000);
    assert.equal(again?.jobId, id);
    assert.equal(again!.deliveryCount, 2);
    await again!.ack();
  });

  it('heartbeats keep a long job with its worker beyond the ack wait', async () => {
    const a = await node();
    const b = await node();
    const id = randomUUID();
    await a.queue.enqueue(id);
    const m = await pullWithin(a, 5000);
    assert.equal(m?.jobId, id);
    assert.equal(await pullWithin(b, 3500), null, 'not redelivered while the holder is alive');
    await m!.ack();
  });

  it('a job that runs out of deliveries is marked failed (JOB_INTERRUPTED), its event published, its message removed', async () => {
    const a = await node({ prefix: 'exh', maxDeliver: 2, ackWaitMs: 500 });
    const job = newJob();
    job.upload_blob = `uploads/${job.record.job_id}`;
    await a.blobs.put(job.upload_blob, 'audio');
    await a.jobs.create(job);
    await a.queue.enqueue(job.record.job_id);
    for (let i = 1; i <= 2; i++) {
      const m = await pullWithin(a, 10_000);
      assert.equal(m?.jobId, job.record.job_id);
      assert.equal(m!.deliveryCount, i);
      await m!.nak();
    }
    // JetStream notices the exhaustion when a worker asks for more.
    const events: JobFinishedEvent[] = [];
    const sub = a.events.subscribe(async (d) => {
      events.push(d.event);
      await d.ack();
    }, { concurrency: 1 });
    const idle = pullWithin(a, 3000);
    const failed = await waitFor(async () => {
      const j = await a.jobs.get(job.record.job_id);
      return j?.value.record.status === 'failed' && j.value.upload_blob === null ? j.value : null;
    }, 15_000, 'job failed');
    assert.equal(await idle, null);
    assert.equal(failed.record.error?.code, 'JOB_INTERRUPTED');
    assert.ok(failed.record.finished_at && failed.record.expires_at);
    assert.equal(failed.upload_blob, null);
    assert.equal(await a.blobs.getStream(job.upload_blob), null);
    await waitFor(() => events.find((e) => e.job_id === job.record.job_id), 10_000, 'event');
    assert.equal(events[0]!.event_id, failed.event_id);
    await waitFor(async () => !(await a.queue.pending()).includes(job.record.job_id), 10_000, 'message removed');
    await sub.stop();
  });

  it('an upload over the limit leaves no chunks behind; keys() skips fresh objects when asked to', async () => {
    const a = await node();
    const nm = names('js');
    const before = (await a.conn.jsm.streams.info(`OBJ_${nm.blobsBucket}`)).state.messages;
    const big = Readable.from(Array.from({ length: 20 }, () => Buffer.alloc(100_000, 7)));
    await assert.rejects(a.blobs.putStream('uploads/too-big', big, { maxBytes: 1_000_000 }), BlobTooLargeError);
    await waitFor(async () => (await a.conn.jsm.streams.info(`OBJ_${nm.blobsBucket}`)).state.messages === before, 5000, 'no chunks left');
    await a.blobs.put('uploads/deleted', 'x');
    await a.blobs.delete('uploads/deleted');
    assert.equal((await a.conn.jsm.streams.info(`OBJ_${nm.blobsBucket}`)).state.messages, before, 'a deleted object leaves nothing');
    const g = await node({ orphanGraceMs: 3600_000 });
    await g.blobs.put('uploads/fresh', 'x');
    assert.ok(!(await g.blobs.keys()).includes('uploads/fresh'));
    assert.ok((await a.blobs.keys()).includes('uploads/fresh'));
    await a.blobs.delete('uploads/fresh');
  });

  it('while NATS is down calls fail fast with BackendUnavailableError; after its restart everything works again', async () => {
    const a = await node({ prefix: 'outage' });
    const b = await node({ prefix: 'outage' });
    const before = newJob();
    await a.jobs.create(before);
    await a.queue.enqueue(before.record.job_id);
    await nats.server.stop();
    await waitFor(() => !a.conn.isConnected && !b.conn.isConnected, 10_000, 'disconnect noticed');
    await assert.rejects(a.jobs.get(before.record.job_id), BackendUnavailableError);
    await assert.rejects(a.jobs.create(newJob()), BackendUnavailableError);
    await assert.rejects(a.queue.enqueue(randomUUID()), BackendUnavailableError);
    await assert.rejects(a.blobs.put('uploads/x', 'x'), BackendUnavailableError);
    await assert.rejects(a.events.publish({ ...(await fakeEvent()) }), BackendUnavailableError);
    assert.ok((await a.jobs.list()).some((j) => j.record.job_id === before.record.job_id), 'list() answers from the watched copy');
    const pulling = pullWithin(b, 30_000); // waits for the reconnect
    await nats.server.start();
    await waitFor(() => a.conn.isConnected && b.conn.isConnected, 20_000, 'reconnect');
    const m = await pulling;
    assert.equal(m?.jobId, before.record.job_id, 'the job queued before the outage is still there');
    await m!.ack();
    assert.equal((await a.jobs.get(before.record.job_id))?.value.record.job_id, before.record.job_id);
    // The watched copy follows changes made after the restart by another node.
    const after = newJob();
    await b.jobs.create(after);
    await waitFor(async () => (await a.jobs.list()).some((j) => j.record.job_id === after.record.job_id), 10_000, 'watch after restart');
  });
});

async function fakeEvent(): Promise<JobFinishedEvent> {
  const j = newJob();
  return { type: 'job.finished', event_id: randomUUID(), job_id: j.record.job_id, occurred_at: new Date().toISOString(), record: j.record, callback: null };
}
