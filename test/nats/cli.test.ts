/**
 * The real command line in distributed mode: `auris serve --role api` and
 * `auris serve --role worker` (real models) against a nats-server. A job uploaded to the
 * API node is analysed by the worker; its results equal `auris analyze` of the same file,
 * its callback arrives, nodes compare their signing keys through NATS, /readyz counts each
 * node's workers, and every node shuts down cleanly on SIGTERM.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { envSkip, modelsMissing } from '../env';
import { defaultModelsDir } from '../../src/inference/env';
import { type JobJson, startReceiver, tempDir, waitFor } from '../http/helpers';
import { type NodeProc, startNode } from './procs';
import { natsUnavailable, TestNatsServer } from './server';

const ROOT = join(__dirname, '..', '..', '..');
const DEMO = join(ROOT, 'test', 'fixtures', 'demo.flac');
const KEY = 'cli-test-key-00001';
const MODELS = ['speech', 'arousal', 'gender'];

const skip = envSkip(natsUnavailable() || modelsMissing(defaultModelsDir()));

describe('auris serve --role api|worker --nats (real models)', { skip, timeout: 120_000 }, () => {
  let nats: TestNatsServer;
  const dir = tempDir('auris-cli-nats-');
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const nodes: NodeProc[] = [];

  before(async () => {
    nats = await TestNatsServer.start();
    receiver = await startReceiver();
    const args = (sub: string): string[] => [
      '--nats',
      nats.url,
      '--data-dir',
      join(dir.path, sub),
      '--api-keys',
      `${KEY}:org:proj`,
      '--concurrency',
      '1',
      '--grpc-port',
      '0',
      '--url-allowlist',
      '127.0.0.1',
      '--log-level',
      'info',
    ];
    // Started in this order: the API node, a worker sharing its DATA_DIR (so its generated
    // keys), a worker with a DATA_DIR (keys) of its own.
    // Each node records its keys after it listens: wait for that before starting the next.
    for (const [role, sub] of [['api', 'api'], ['worker', 'api'], ['worker', 'worker']] as const) {
      const node = await startNode({ role, args: args(sub), real: true });
      nodes.push(node);
      await waitFor(() => node.output().includes('signing keys compared with the other nodes'), 30_000, `${role} node's key check`);
    }
  });
  after(async () => {
    for (const n of nodes) await n.kill();
    await receiver?.close();
    await nats?.close();
    dir.cleanup();
  });

  it('analyses an upload on the worker node: the results equal `auris analyze`; the callback arrives', async () => {
    const api = nodes[0]!;
    const query = `models=${MODELS.join(',')}&output_period=1024&include_summary=true&callback=${encodeURIComponent(receiver.url)}`;
    const res = await fetch(`${api.url}/file-processing/jobs?${query}`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'audio/flac' },
      body: readFileSync(DEMO),
    });
    const text = await res.text();
    assert.equal(res.status, 201, text);
    const job = JSON.parse(text) as JobJson;
    const done = await waitFor(async () => {
      const j = (await (await fetch(`${api.url}/file-processing/jobs/${job.job_id}`, { headers: { 'x-api-key': KEY } })).json()) as JobJson;
      return j.status === 'succeeded' || j.status === 'failed' ? j : null;
    }, 90_000, 'job finished').catch((err: Error) => {
      throw new Error(`${err.message}\n${nodes.map((n) => n.output().slice(-3000)).join('\n---\n')}`);
    });
    assert.equal(done.status, 'succeeded', JSON.stringify(done));
    assert.equal(done.audio?.channels, 1);
    const results = (await (await fetch(`${api.url}${done.results_url}`, { headers: { 'x-api-key': KEY } })).json()) as { job_id: string; result: unknown };
    assert.equal(results.job_id, job.job_id);
    const cli = JSON.parse(
      execFileSync(process.execPath, [join(ROOT, 'dist', 'src', 'cli', 'main.js'), 'analyze', DEMO, '--models', MODELS.join(','), '--output-period', '1024', '--summary'], {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      }),
    ) as { result: unknown };
    assert.deepEqual(results.result, cli.result);
    await waitFor(() => receiver.received.find((r) => r.headers['x-auris-job-id'] === job.job_id), 30_000, 'callback');
  });

  it('nodes compare their signing keys through NATS: a node with keys of its own warns, one sharing the keys does not', () => {
    const [api, shared, worker] = nodes.map((n) => n.output());
    const warnings = (out: string): string[] => out.split('\n').filter((l) => l.includes('with other keys than'));
    assert.deepEqual(warnings(api!), [], 'the first node has no one to compare with');
    assert.deepEqual(warnings(shared!), [], 'same keys as the API node');
    const own = warnings(worker!);
    assert.equal(own.length, 2, worker);
    assert.match(own[0]!, /"msg":"this node signs download requests with other keys than 2 of the 2 other node\(s\): give every node the same SIGNING_KEY_FILE/);
    assert.match(own[1]!, /"msg":"this node signs callbacks with other keys than 2 of the 2 other node\(s\): give every node the same CALLBACK_SECRET_FILE/);
    assert.doesNotMatch(api! + shared! + worker!, /own generated/);
  });

  it('/readyz counts the workers each node runs: none on the API node', async () => {
    const [api, , worker] = nodes;
    const ready = async (n: NodeProc): Promise<{ status: string; workers: number }> => (await fetch(`${n.url}/readyz`)).json() as never;
    assert.deepEqual(await ready(api!).then((r) => [r.status, r.workers]), ['ready', 0]);
    assert.deepEqual(await ready(worker!).then((r) => [r.status, r.workers]), ['ready', 1]);
  });

  it('every node stops cleanly on SIGTERM, saying what happens to running jobs; the log has one level format', async () => {
    for (const n of nodes) {
      await n.stop();
      assert.equal(n.proc.exitCode, 0, n.output().slice(-2000));
    }
    const [api, shared, worker] = nodes.map((n) => n.output());
    assert.match(api!, /"msg":"shutting down: finishing requests \(this node runs no jobs\)"/);
    assert.match(worker!, /"msg":"shutting down: finishing requests; running jobs go back to the queue, where another worker takes them"/);
    for (const out of [api!, worker!, shared!]) {
      assert.doesNotMatch(out, /resume on the next start/);
      const lines = out.split('\n').filter((l) => l.startsWith('{'));
      assert.ok(lines.length > 3, out);
      for (const l of lines) assert.equal(typeof (JSON.parse(l) as { level: unknown }).level, 'number', l);
    }
  });
});
