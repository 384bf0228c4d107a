/**
 * A 3-server NATS cluster with NATS_REPLICAS=3: the streams and buckets are replicated, and
 * the backends keep working (jobs, queue, blobs, events) when the server a node is connected
 * to is killed.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { openNatsBackends, type NatsBackends } from '../../src/jobs/nats';
import { names } from '../../src/jobs/nats/settings';
import { BackendUnavailableError, type QueueMessage } from '../../src/jobs/types';
import { tempDir } from '../http/helpers';
import { newJob } from '../jobs/behaviour';
import { envSkip } from '../env';
import { natsUnavailable, TestNatsCluster } from './server';

const skip = envSkip(natsUnavailable());

/**
 * Retries while the cluster fails over (BackendUnavailableError), for at most 60 s: on a loaded
 * 2-core CI machine the object store's stream once took over 30 s to answer after the kill.
 */
async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof BackendUnavailableError) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

describe('NATS cluster of 3 with replicas 3', { skip, timeout: 120_000 }, () => {
  let cluster: TestNatsCluster;
  let b: NatsBackends;
  const tmp = tempDir('auris-natsc-');

  before(async () => {
    cluster = await TestNatsCluster.start(3);
    b = await openNatsBackends({ servers: cluster.url, replicas: 3, retentionSec: 3600, ackWaitMs: 2000, reconnectWaitMs: 100, tmpDir: tmp.path, orphanGraceMs: 0 });
  });
  after(async () => {
    await b?.close();
    await cluster?.close();
    tmp.cleanup();
  });

  it('replicates every stream and bucket three times and survives the loss of a server', async () => {
    const n = names('auris');
    for (const stream of [n.jobsStream, n.eventsStream, n.deadStream, `KV_${n.jobsBucket}`, `OBJ_${n.blobsBucket}`]) {
      const info = await b.conn.jsm.streams.info(stream);
      assert.equal(info.config.num_replicas, 3, stream);
    }
    const job = newJob();
    await b.jobs.create(job);
    await b.blobs.put(`uploads/${job.record.job_id}`, 'audio bytes');
    await b.queue.enqueue(job.record.job_id);

    // Kill the server this node is connected to.
    const connected = b.conn.nc.getServer();
    const victim = cluster.servers.find((s) => connected.endsWith(`:${s.port}`));
    assert.ok(victim, `connected to ${connected}`);
    await victim.stop('SIGKILL');

    const got = await retrying(() => b.jobs.get(job.record.job_id));
    assert.equal(got?.value.record.job_id, job.record.job_id);
    const blob = await retrying(() => b.blobs.getStream(`uploads/${job.record.job_id}`));
    assert.ok(blob);
    const chunks: Buffer[] = [];
    for await (const c of blob.stream) chunks.push(c as Buffer);
    assert.equal(Buffer.concat(chunks).toString(), 'audio bytes');
    const c = new AbortController();
    const t = setTimeout(() => c.abort(), 30_000);
    const m: QueueMessage | null = await b.queue.pull(c.signal);
    clearTimeout(t);
    assert.equal(m?.jobId, job.record.job_id);
    await retrying(() => m!.ack());
    const later = newJob();
    await retrying(() => b.jobs.create(later));
    await retrying(() => b.queue.enqueue(later.record.job_id));
    assert.ok((await retrying(() => b.queue.pending())).includes(later.record.job_id));
    assert.notEqual(randomUUID(), later.record.job_id);
  });
});
