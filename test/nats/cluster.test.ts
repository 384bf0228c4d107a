/**
 * Distributed mode end to end, as separate processes on a real nats-server: one API node
 * and two worker nodes (test/nats/node.ts: `auris serve` with a sleeping fake analyzer).
 *   - 50 jobs with callbacks: all succeed, each once in the results, callbacks at least
 *     once per job and deduplicable (one event id per job, same id on every attempt);
 *   - SIGKILL of the worker running a long job: the other worker finishes it;
 *   - SIGTERM of a worker running a job: it gives the job back (nak), exits 0, the other worker runs it;
 *   - SIGKILL and restart of the API node: every job is still readable, pending callbacks arrive;
 *   - nats-server stopped and restarted mid-run: 503 with Retry-After meanwhile, no accepted job lost.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type JobJson, type Received, sleep, startReceiver, tempDir, waitFor } from '../http/helpers';
import { fakeJobAudio } from './node';
import { type NodeProc, startNode } from './procs';
import { envSkip } from '../env';
import { natsUnavailable, TestNatsServer } from './server';

const skip = envSkip(natsUnavailable());
const KEY = 'cluster-test-key-0001';

describe('distributed mode: API node + 2 workers on nats-server', { skip, timeout: 240_000 }, () => {
  let nats: TestNatsServer;
  const dir = tempDir('auris-cluster-');
  const markers = join(dir.path, 'markers.log');
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let apiNode: NodeProc;
  const workers: NodeProc[] = [];
  const nodes: NodeProc[] = [];
  /** Job ids created so far (every one must stay readable). */
  const created: string[] = [];

  const args = (): string[] => [
    '--nats',
    nats.url,
    '--data-dir',
    dir.path,
    '--api-keys',
    `${KEY}:org:proj`,
    '--concurrency',
    '2',
    '--nats-ack-wait-ms',
    '3000',
    '--rate-limit-rps',
    '100000',
    '--rate-limit-burst',
    '100000',
    '--callback-backoff-ms',
    '100',
    '--log-level',
    'warn',
    '--url-allowlist',
    '127.0.0.1', // the callback receiver listens on loopback (SSRF guard)
  ];
  const start = async (role: 'api' | 'worker'): Promise<NodeProc> => {
    const n = await startNode({ role, args: args(), env: { AURIS_TEST_MARKERS: markers } });
    nodes.push(n);
    return n;
  };
  const call = (path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(apiNode.url + path, { ...init, headers: { 'x-api-key': KEY, ...(init.headers as Record<string, string>) } });
  const createJob = async (token: string, sleepMs: number): Promise<string> => {
    const res = await call(`/file-processing/jobs?models=speech&output_period=1024&callback=${encodeURIComponent(receiver.url)}`, {
      method: 'POST',
      headers: { 'content-type': 'audio/wav' },
      body: fakeJobAudio({ token, sleepMs }),
    });
    const text = await res.text();
    assert.equal(res.status, 201, text);
    const id = (JSON.parse(text) as JobJson).job_id;
    created.push(id);
    return id;
  };
  const getJob = async (id: string): Promise<JobJson> => {
    const res = await call(`/file-processing/jobs/${id}`);
    assert.equal(res.status, 200, `GET ${id}: ${res.status}`);
    return (await res.json()) as JobJson;
  };
  const markerLines = (): Array<{ what: string; pid: number; token: string }> =>
    readFileSync(markers, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [what, pid, token] = l.split(' ');
        return { what: what!, pid: Number(pid), token: token! };
      });
  /** Callbacks received for a job (all attempts). */
  const callbacksOf = (id: string): Received[] => receiver.received.filter((r) => r.headers['x-auris-job-id'] === id);
  /** Jobs whose callback the receiver answered with 200. */
  const delivered = new Set<string>();
  const waitCallbacks = (ids: string[], timeoutMs = 60_000): Promise<unknown> =>
    waitFor(() => ids.every((id) => delivered.has(id)), timeoutMs, `callbacks (${ids.filter((id) => !delivered.has(id)).length} missing)`);
  const dump = (): string => nodes.map((n) => `--- ${n.role} ${n.pid}\n${n.output().slice(-3000)}`).join('\n') + `\n--- nats\n${nats.logTail.slice(-2000)}`;

  before(async () => {
    writeFileSync(markers, '');
    nats = await TestNatsServer.start();
    // Every 5th job's first callback attempt gets a 503: retried with the same event id.
    const failedOnce = new Set<string>();
    receiver = await startReceiver((r) => {
      const job = String(r.headers['x-auris-job-id']);
      const body = JSON.parse(r.body) as JobJson & { request: { models: string[] } };
      const idx = created.indexOf(job);
      if (idx % 5 === 0 && !failedOnce.has(job) && body.status === 'succeeded') {
        failedOnce.add(job);
        return 503;
      }
      delivered.add(job);
      return 200;
    });
    apiNode = await start('api');
    workers.push(await start('worker'), await start('worker'));
  });

  after(async () => {
    for (const n of nodes) await n.kill();
    await receiver?.close();
    await nats?.close();
    dir.cleanup();
  });

  it('runs 50 jobs with callbacks: all succeed, each exactly once in the results, callbacks at least once and deduplicable', async () => {
    const tokens = Array.from({ length: 50 }, (_, i) => `batch-${i}`);
    const ids: string[] = [];
    for (let i = 0; i < tokens.length; i += 10) {
      ids.push(...(await Promise.all(tokens.slice(i, i + 10).map((t, j) => createJob(t, 100 + ((i + j) % 5) * 50)))));
    }
    assert.equal(new Set(ids).size, 50);
    try {
      await waitCallbacks(ids, 120_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${dump()}`);
    }

    // Results: each job succeeded once, with its own envelope.
    for (const id of ids) {
      const job = await getJob(id);
      assert.equal(job.status, 'succeeded', JSON.stringify(job));
      const res = await call(`/file-processing/jobs/${id}/results`);
      assert.equal(res.status, 200);
      const body = (await res.json()) as { job_id: string; result: { channels: Record<string, { time_series: unknown[] }> } };
      assert.equal(body.job_id, id);
      assert.equal(body.result.channels['0']!.time_series.length, 3);
    }
    const ends = markerLines().filter((m) => m.what === 'end' && m.token.startsWith('batch-'));
    for (const t of tokens) assert.equal(ends.filter((e) => e.token === t).length, 1, `${t} analysed once`);
    const pids = new Set(ends.map((e) => e.pid));
    assert.equal(pids.size, 2, 'both workers took jobs');
    assert.ok([...pids].every((p) => workers.some((w) => w.pid === p)));

    // Callbacks: one event id per job, the same on every attempt; the 503s were retried.
    const eventsByJob = new Map<string, Set<string>>();
    for (const id of ids) {
      const cbs = callbacksOf(id);
      assert.ok(cbs.length >= 1);
      eventsByJob.set(id, new Set(cbs.map((r) => String(r.headers['x-auris-event-id']))));
      for (const r of cbs) assert.equal((JSON.parse(r.body) as JobJson).status, 'succeeded');
    }
    for (const [id, evs] of eventsByJob) assert.equal(evs.size, 1, `one event id for ${id}`);
    const retried = ids.filter((id) => callbacksOf(id).some((r) => r.headers['x-auris-attempt'] === '2'));
    assert.ok(retried.length >= 10, `503s retried: ${retried.length}`);
    for (const id of retried) {
      const attempts = callbacksOf(id);
      assert.equal(new Set(attempts.map((r) => r.headers['x-auris-event-id'])).size, 1);
    }
  });

  it('SIGKILL of the worker in the middle of a long job: the other worker finishes it', async () => {
    const id = await createJob('long', 5000); // longer than the ack wait: heartbeats keep it on the second worker
    const started = await waitFor(() => markerLines().find((m) => m.what === 'start' && m.token === 'long'), 30_000, 'long job started');
    const victim = workers.find((w) => w.pid === started.pid);
    assert.ok(victim, 'a worker runs the long job');
    await waitFor(async () => (await getJob(id)).progress >= 0.2, 30_000, 'some progress');
    await victim.kill();
    workers.splice(workers.indexOf(victim), 1);

    const done = await waitFor(async () => {
      const j = await getJob(id);
      return j.status === 'succeeded' || j.status === 'failed' ? j : null;
    }, 90_000, 'long job finished').catch((err: Error) => {
      throw new Error(`${err.message}\n${dump()}`);
    });
    assert.equal(done.status, 'succeeded', JSON.stringify(done));
    const ends = markerLines().filter((m) => m.what === 'end' && m.token === 'long');
    assert.equal(ends.length, 1);
    assert.notEqual(ends[0]!.pid, victim.pid);
    assert.equal(ends[0]!.pid, workers[0]!.pid);
    await waitCallbacks([id]);
    workers.push(await start('worker')); // back to two workers
  });

  it('SIGTERM of the worker running a job: it gives the job back and exits cleanly; the other worker finishes it', async () => {
    const id = await createJob('handover', 4000);
    const started = await waitFor(() => markerLines().find((m) => m.what === 'start' && m.token === 'handover'), 30_000, 'job started');
    const leaving = workers.find((w) => w.pid === started.pid);
    assert.ok(leaving);
    await leaving.stop();
    assert.equal(leaving.proc.exitCode, 0, leaving.output().slice(-2000));
    workers.splice(workers.indexOf(leaving), 1);
    const done = await waitFor(async () => {
      const j = await getJob(id);
      return j.status === 'succeeded' || j.status === 'failed' ? j : null;
    }, 60_000, 'handed-over job finished');
    assert.equal(done.status, 'succeeded');
    const runs = markerLines().filter((m) => m.token === 'handover');
    assert.deepEqual(
      runs.map((m) => [m.what, m.pid === leaving.pid ? 'leaving' : 'other']),
      [
        ['start', 'leaving'],
        ['start', 'other'],
        ['end', 'other'],
      ],
    );
    await waitCallbacks([id]);
    workers.push(await start('worker'));
  });

  it('a restarted API node reads every job; callbacks pending at the kill still arrive', async () => {
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => createJob(`api-restart-${i}`, 600)));
    await apiNode.kill();
    apiNode = await start('api');
    for (const id of created) assert.equal((await getJob(id)).job_id, id);
    await waitCallbacks(ids, 90_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${dump()}`);
    });
    for (const id of ids) assert.equal((await getJob(id)).status, 'succeeded');
  });

  it('nats-server stopped and restarted mid-run: 503 + Retry-After meanwhile, no accepted job lost', async () => {
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => createJob(`outage-${i}`, 1500)));
    await waitFor(async () => (await getJob(ids[0]!)).status !== 'queued', 30_000, 'processing');
    await nats.stop();

    // While NATS is down the API answers at once, with 503 and Retry-After.
    const down = await waitFor(async () => {
      const res = await call(`/file-processing/jobs/${ids[0]}`);
      await res.arrayBuffer();
      return res.status === 503 ? res : null;
    }, 15_000, '503 while NATS is down');
    assert.ok(Number(down.headers.get('retry-after')) > 0);
    const post = await call('/file-processing/jobs?models=speech&output_period=1024', {
      method: 'POST',
      headers: { 'content-type': 'audio/wav' },
      body: fakeJobAudio({ token: 'refused', sleepMs: 10 }),
    });
    assert.equal(post.status, 503);
    assert.ok(Number(post.headers.get('retry-after')) > 0);
    assert.equal(((await post.json()) as { code: string }).code, 'SERVICE_UNAVAILABLE');
    await sleep(1500);

    await nats.start();
    // Until the API node has reconnected it still answers 503: a client retries.
    await waitFor(async () => {
      const res = await call(`/file-processing/jobs/${ids[0]}`);
      await res.arrayBuffer();
      return res.status === 200;
    }, 30_000, 'API node reconnected');
    const after = await createJob('after-outage', 100);
    await waitCallbacks([...ids, after], 120_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${dump()}`);
    });
    for (const id of [...ids, after]) assert.equal((await getJob(id)).status, 'succeeded');
    for (const id of created) assert.equal((await getJob(id)).job_id, id);
  });
});
