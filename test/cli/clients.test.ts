/**
 * The client commands against a real service (REST + gRPC on 127.0.0.1, the shipped models):
 * one name per thing (`--url` the REST base URL, `--grpc` the gRPC address, the old `--server`
 * refused with the new name), the same default models (every model the server has), a
 * gRPC stream pointed at the REST port explained in words, and job warnings on stderr.
 */
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { packageRoot } from '../../src/inference';
import { runAsync } from '../grpc/helpers';
import { KEY_A, startStreamingApp } from '../websocket/helpers';

const CLI = path.join(packageRoot(), 'dist', 'src', 'cli', 'main.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-cli-clients-'));
let app: Awaited<ReturnType<typeof startStreamingApp>>;
let serverModels: string[];
let wav: string;

before(async () => {
  app = await startStreamingApp();
  serverModels = ((await (await fetch(`${app.url}/models`, { headers: { 'x-api-key': KEY_A } })).json()) as { models: Array<{ name: string }> }).models.map((m) => m.name);
  wav = path.join(tmp, 'tone.wav');
  const r = spawnSync('sox', ['-n', '-r', '16000', '-b', '16', '-c', '1', wav, 'synth', '3', 'sine', '300', 'vol', '0.5']);
  assert.equal(r.status, 0, r.stderr?.toString());
});
after(async () => {
  await app.cleanup();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const cli = (args: string[]) => runAsync(process.execPath, [CLI, ...args], { env: { ...process.env, AURIS_URL: '', AURIS_GRPC_ADDRESS: '' } });
const speechFirst = (names: string[]): string[] => [...names].sort((a, b) => Number(b === 'speech') - Number(a === 'speech'));

describe('client commands: names, defaults, messages', () => {
  it('--server is refused with the option that replaced it (exit 2)', async () => {
    const stream = await cli(['stream', wav, '--server', `127.0.0.1:${app.grpcPort}`, '--api-key', KEY_A]);
    assert.equal(stream.code, 2);
    assert.match(stream.stderr, /--server is now --grpc <host:port>/);
    const jobs = await cli(['jobs', 'list', '--server', app.url, '--api-key', KEY_A]);
    assert.equal(jobs.code, 2);
    assert.match(jobs.stderr, /--server is now --url/);
  });

  it('stream and jobs submit default to every model the server has, speech first', async () => {
    assert.ok(serverModels.length >= 2, JSON.stringify(serverModels));
    const stream = await cli(['stream', wav, '--grpc', `127.0.0.1:${app.grpcPort}`, '--api-key', KEY_A]);
    assert.equal(stream.code, 0, stream.stderr);
    // the first final (provisional messages, sent first by default, carry only the models their tier has so far)
    const step = stream.stdout.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as { final?: boolean; results: Record<string, unknown> }).find((m) => m.final === true);
    assert.ok(step, `a final step message in: ${stream.stdout.slice(0, 500)}`);
    assert.deepEqual(Object.keys(step.results), speechFirst(serverModels));
    const job = await cli(['jobs', 'submit', wav, '--url', app.url, '--api-key', KEY_A]);
    assert.equal(job.code, 0, job.stderr);
    const env = JSON.parse(job.stdout) as { result: { channels: Record<string, { time_series: Array<{ results: Record<string, unknown> }> }> } };
    assert.deepEqual(Object.keys(env.result.channels['0']!.time_series[0]!.results), speechFirst(serverModels));
  });

  it('--transport ws takes the REST URL; the gRPC address defaults to its host on port 50051', async () => {
    const ws = await cli(['stream', wav, '--transport', 'ws', '--url', app.url, '--api-key', KEY_A, '--models', 'speech']);
    assert.equal(ws.code, 0, ws.stderr);
    assert.equal(ws.stdout.trim().split('\n').filter((l) => !l.includes('"final":false')).length, 3);
    // No --grpc: --url's host, port 50051 (where this test's service does not listen).
    const grpc = await cli(['stream', wav, '--url', 'http://127.0.0.1:9', '--api-key', KEY_A, '--models', 'speech']);
    assert.equal(grpc.code, 1);
    assert.match(grpc.stderr, /127\.0\.0\.1:50051/);
  });

  it('a gRPC stream pointed at the REST port says so in words', async () => {
    const rest = new URL(app.url);
    const r = await cli(['stream', wav, '--grpc', `127.0.0.1:${rest.port}`, '--api-key', KEY_A, '--models', 'speech']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /\[UNAVAILABLE\]: 127\.0\.0\.1:\d+ does not answer gRPC \(is it the REST port\?\)/);
    assert.match(r.stderr, /--transport ws --url/);
  });

  it('jobs submit prints the job warnings on stderr (TRUNCATED_AUDIO) and the results on stdout', async () => {
    const cut = path.join(tmp, 'cut.wav');
    fs.writeFileSync(cut, fs.readFileSync(wav).subarray(0, 44 + 16000 * 2));
    const r = await cli(['jobs', 'submit', cut, '--url', app.url, '--api-key', KEY_A, '--models', 'speech']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^auris jobs: warning \[TRUNCATED_AUDIO\]: /m);
    assert.ok(JSON.parse(r.stdout).result);
  });

  it('the top-level help names both stream transports', async () => {
    const r = await cli(['--help']);
    assert.match(r.stdout, /stream +send an audio file as a live stream \(gRPC or WebSocket\)/);
  });
});
