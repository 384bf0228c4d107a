/**
 * Faults (docs/reliability.md): disk full under the data directory (a 512 KiB tmpfs; skipped
 * where mounting is not allowed), an unwritable data directory and broken models at start-up,
 * and SIGTERM during a job (`auris serve` as a child process). Worker killed mid-job and a
 * hanging callback receiver are covered by test/http/restart.test.ts and
 * test/http/callbacks.test.ts; gRPC streams closed with a status on shutdown by
 * test/grpc/lifecycle.test.ts.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { skipOrFail } from '../env';
import { api, createJob, FakeAnalyzer, fakeWav, KEY_A, sleep, startServer, tempDir, waitFor, waitForJob } from '../http/helpers';

const ROOT = resolve(__dirname, '../../..');
const CLI = join(ROOT, 'dist/src/cli/main.js');
const MODELS = join(ROOT, 'models');

/** Runs a mount command as root: directly, or through `sudo -n` (CI users without root). */
function asRoot(cmd: string, args: string[]): boolean {
  const argv = process.getuid?.() === 0 ? [cmd, ...args] : ['sudo', '-n', cmd, ...args];
  return spawnSync(argv[0]!, argv.slice(1), { stdio: 'ignore' }).status === 0;
}

function tryMount(dir: string, size: string): boolean {
  mkdirSync(dir, { recursive: true });
  return asRoot('mount', ['-t', 'tmpfs', '-o', `size=${size},uid=${process.getuid?.() ?? 0},gid=${process.getgid?.() ?? 0}`, 'tmpfs', dir]);
}

function fill(dir: string): string[] {
  const files: string[] = [];
  for (let i = 0; i < 10_000; i++) {
    const f = join(dir, `filler-${i}`);
    try {
      writeFileSync(f, Buffer.alloc(i === 0 ? 1 << 20 : 4096, 1));
      files.push(f);
    } catch {
      files.push(f);
      break;
    }
  }
  return files;
}

describe('faults', () => {
  const dir = tempDir('auris-faults-');
  after(() => dir.cleanup());

  it('disk full under the data directory: 503 problem+json, /readyz red, no job record half-written; recovers when space returns', async (t) => {
    const mnt = join(dir.path, 'tmpfs');
    if (!tryMount(mnt, '512k')) return skipOrFail(t, 'cannot mount a tmpfs here (needs root, or sudo without a password)');
    const analyzer = new FakeAnalyzer();
    const server = await startServer(mnt, { analyzer });
    try {
      assert.equal((await fetch(server.url + '/readyz')).status, 200);
      const fillers = fill(mnt);
      const res = await createJob(server, KEY_A, { audio: fakeWav(20_000) });
      const text = await res.text();
      assert.ok(res.status === 503 || res.status === 507, `${res.status} ${text}`);
      assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
      assert.match(text, /ENOSPC|space|storage|store/i);
      // URL method: only the job record is written
      const byUrl = await createJob(server, KEY_A, { url: 'http://127.0.0.1:9/a.wav' });
      const byUrlText = await byUrl.text();
      assert.equal(byUrl.status, 503, byUrlText);
      assert.match(byUrlText, /ENOSPC/);
      const ready = await fetch(server.url + '/readyz');
      const readyText = await ready.text();
      assert.equal(ready.status, 503);
      assert.match(readyText, /not writable \(ENOSPC\)/);
      const list = (await (await api(server, KEY_A)('/file-processing/jobs')).json()) as { jobs: unknown[] };
      assert.equal(list.jobs.length, 0, 'no job is listed that was not stored');
      for (const f of readdirSync(join(mnt, 'jobs'))) {
        if (f.endsWith('.json')) JSON.parse(readFileSync(join(mnt, 'jobs', f), 'utf8'));
      }
      for (const f of fillers) rmSync(f, { force: true });
      await waitFor(async () => (await fetch(server.url + '/readyz')).status === 200, 10_000, 'readyz green again');
      const ok = await createJob(server, KEY_A, { audio: fakeWav(20_000) });
      assert.equal(ok.status, 201, await ok.clone().text());
      const job = (await ok.json()) as { job_id: string };
      assert.equal((await waitForJob(server, KEY_A, job.job_id)).status, 'succeeded');
    } finally {
      await server.close();
      asRoot('umount', ['-l', mnt]);
    }
  });

  it('a data directory that cannot be created: `auris serve` exits non-zero naming the path', () => {
    const file = join(dir.path, 'a-file');
    writeFileSync(file, 'x');
    const r = spawnSync(process.execPath, [CLI, 'serve', '--data-dir', join(file, 'data'), '--port', '0', '--grpc-port', '0', '--host', '127.0.0.1'], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, API_KEYS: `${KEY_A}:org-a:proj-a` } });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /ENOTDIR/);
    assert.ok(r.stderr.includes(file), r.stderr);
  });

  for (const [what, breakIt, pattern] of [
    ['corrupt', (d: string) => writeFileSync(join(d, 'speech', 'model.onnx'), 'not an onnx model'), /speech\/model\.onnx: not a loadable ONNX model/],
    ['missing', (d: string) => rmSync(join(d, 'gender', 'model.onnx')), /gender\/model\.onnx: model file missing/],
    ['manifest not JSON', (d: string) => writeFileSync(join(d, 'arousal', 'manifest.json'), '{'), /arousal\/manifest\.json: invalid JSON/],
  ] as const) {
    it(`a ${what} model at start: \`auris serve\` exits 1 naming the file, nothing listens`, () => {
      const models = join(dir.path, `models-${what.replace(/\W/g, '')}`);
      cpSync(MODELS, models, { recursive: true });
      breakIt(models);
      const r = spawnSync(process.execPath, [CLI, 'serve', '--data-dir', join(dir.path, 'd-' + what.replace(/\W/g, '')), '--models-dir', models, '--port', '0', '--grpc-port', '0', '--host', '127.0.0.1'], {
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, API_KEYS: `${KEY_A}:org-a:proj-a` },
      });
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, pattern);
      assert.doesNotMatch(r.stdout, /Server listening/);
    });
  }

  it('SIGTERM during a job: stops accepting, hands the running job back, exits 0, and the job is finished after the next start', async () => {
    const data = join(dir.path, 'sigterm');
    const wavPath = join(dir.path, 'tone.wav');
    execFileSync('sox', ['-V1', '-n', '-r', '16000', '-c', '1', '-b', '16', wavPath, 'synth', '60', 'sine', '300', 'vol', '0.3']);
    const wav = readFileSync(wavPath);
    // The job's URL: a host that sends the first 64 KiB and then holds the download open, so the
    // job is certainly running when the signal lands; after the restart it sends the whole file.
    let stall = true;
    let requests = 0;
    const host = createHttpServer((_req, res) => {
      requests++;
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': wav.length });
      if (stall) res.write(wav.subarray(0, 65536));
      else res.end(wav);
    });
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
    const audioUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}/tone.wav`;
    const child = spawn(process.execPath, [CLI, 'serve', '--data-dir', data, '--port', '0', '--grpc-port', '0', '--host', '127.0.0.1', '--concurrency', '1', '--url-allowlist', '127.0.0.1/32'], {
      env: { ...process.env, API_KEYS: `${KEY_A}:org-a:proj-a`, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
    try {
      const url = await waitFor(() => /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1], 60_000, 'auris serving');
      const res = await fetch(`${url}/file-processing/jobs?models=speech,arousal,gender&output_period=1024`, { method: 'POST', headers: { 'x-api-key': KEY_A, 'content-type': 'application/json' }, body: JSON.stringify({ url: audioUrl }) });
      assert.equal(res.status, 201, await res.clone().text());
      const jobId = ((await res.json()) as { job_id: string }).job_id;
      const status = async (): Promise<string> => ((await (await fetch(`${url}/file-processing/jobs/${jobId}`, { headers: { 'x-api-key': KEY_A } })).json()) as { status: string }).status;
      await waitFor(async () => requests === 1 && (await status()) === 'processing', 30_000, 'the job to be downloading its audio');
      child.kill('SIGTERM');
      const code = await Promise.race([exited, sleep(60_000).then(() => 'timeout')]);
      assert.equal(code, 0, out.slice(-2000));
      assert.match(out, /shutting down/);
      // The worker gave the running job back (the signal landed while it ran).
      assert.match(out, new RegExp(`"job_id":"${jobId}"[^\n]*job interrupted by shutdown`), out.slice(-3000));
      await assert.rejects(fetch(`${url}/healthz`));
      // Stored as not finished: on the next start (no worker yet) it is queued again.
      const idle = await startServer(data, { startWorker: false });
      try {
        const job = (await (await api(idle, KEY_A)(`/file-processing/jobs/${jobId}`)).json()) as { status: string; finished_at: string | null };
        assert.ok(job.status === 'queued' || job.status === 'processing', job.status);
        assert.equal(job.finished_at, null);
      } finally {
        await idle.close();
      }
      // The next start with a worker finishes it.
      stall = false;
      const server = await startServer(data, { config: { concurrency: 1, download: { urlAllowlist: ['127.0.0.1/32'] } } });
      try {
        const job = await waitForJob(server, KEY_A, jobId, undefined, 60_000);
        assert.equal(job.status, 'succeeded', JSON.stringify(job.error));
        assert.equal(requests, 2, 'downloaded again after the restart');
      } finally {
        await server.close();
      }
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      host.closeAllConnections();
      await new Promise<void>((r) => host.close(() => r()));
    }
  });
});
