/**
 * Rough edges an integrator hits: the 415 message names the type sent, integer parameters are
 * plain decimal, a wrong method on a known path is 405 with Allow, `auris --version`.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AurisServer } from '../../src/http/server';
import { api, createJob, fakeWav, FakeAnalyzer, KEY_A, sox, startServer, tempDir, waitForJob, type JobJson } from './helpers';

describe('rough edges', () => {
  const dir = tempDir();
  let server: AurisServer;
  before(async () => {
    server = await startServer(dir.path, { analyzer: new FakeAnalyzer() });
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  for (const type of ['audio/mp4', 'audio/L16;rate=16000', 'text/plain']) {
    it(`415 for ${type} names the type, not "a body is required"`, async () => {
      const res = await createJob(server, KEY_A, { contentType: type, audio: fakeWav() });
      assert.equal(res.status, 415);
      const p = (await res.json()) as { code: string; detail: string; supported_media_types: string[] };
      assert.equal(p.code, 'UNSUPPORTED_MEDIA_TYPE');
      assert.match(p.detail, new RegExp(`Content-Type ${type.split(';')[0]!.replace('/', '\\/')} is not accepted`, 'i'));
      assert.ok(p.supported_media_types.includes('audio/wav'));
    });
  }

  it('output_period and channel accept plain decimal integers only', async () => {
    for (const q of ['output_period=0x400', 'output_period=1.024e3', 'output_period=%2B64', 'output_period=%2064', 'output_period=1024&channel=0x1', 'output_period=1024&channel=1.0']) {
      const res = await createJob(server, KEY_A, { query: `models=speech&${q}` });
      assert.equal(res.status, 400, q);
      const p = (await res.json()) as { code: string; errors: Array<{ parameter: string }> };
      assert.equal(p.code, 'INVALID_PARAMETER', q);
      assert.match(p.errors[0]!.parameter, /^(output_period|channel)$/);
    }
    const ok = await createJob(server, KEY_A, { query: 'models=speech&output_period=1024&channel=0' });
    assert.equal(ok.status, 201);
    const job = (await ok.json()) as JobJson;
    assert.equal(job.request.output_period, 1024);
    assert.equal(job.request.channel, 0);
  });

  it('a wrong method on a known path is 405 METHOD_NOT_ALLOWED with Allow; an unknown path stays 404', async () => {
    const job = (await (await createJob(server, KEY_A, {})).json()) as JobJson;
    const cases: Array<[string, string, string]> = [
      ['PUT', `/file-processing/jobs/${job.job_id}`, 'GET, DELETE, HEAD'],
      ['PATCH', `/file-processing/jobs/${job.job_id}`, 'GET, DELETE, HEAD'],
      ['POST', `/file-processing/jobs/${job.job_id}/results`, 'GET, HEAD'],
      ['DELETE', '/file-processing/jobs', 'GET, POST, HEAD'],
      ['POST', '/models', 'GET, HEAD'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await api(server, KEY_A)(path, { method });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get('allow')?.split(', ').sort().join(', '), allow.split(', ').sort().join(', '));
      assert.equal(((await res.json()) as { code: string }).code, 'METHOD_NOT_ALLOWED');
    }
    assert.equal((await api(server, KEY_A)('/file-processing/nothing', { method: 'PUT' })).status, 404);
  });

  it('progress grows during a URL download whose size is known (the first 20 %), then through the analysis', async () => {
    const body = fakeWav(200_000);
    let finish!: () => void;
    const held = new Promise<void>((r) => (finish = r));
    const host = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': String(body.length) });
      res.write(body.subarray(0, 100_000));
      void held.then(() => res.end(body.subarray(100_000)));
    });
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(host.address() as AddressInfo).port}/big.wav`;
      const job = (await (await createJob(server, KEY_A, { url })).json()) as JobJson;
      const mid = await waitForJob(server, KEY_A, job.job_id, (j) => j.progress > 0, 10_000);
      assert.equal(mid.status, 'processing');
      assert.ok(mid.progress > 0.05 && mid.progress <= 0.1 + 1e-9, `half the bytes: ${mid.progress}`);
      finish();
      const done = await waitForJob(server, KEY_A, job.job_id);
      assert.equal(done.status, 'succeeded');
      assert.equal(done.source.size_bytes, body.length);
    } finally {
      finish();
      host.close();
    }
  });

  it('auris --version prints the package version', () => {
    const main = resolve(__dirname, '..', '..', 'src', 'cli', 'main.js');
    const pkg = require(resolve(__dirname, '..', '..', '..', 'package.json')) as { version: string };
    assert.equal(execFileSync(process.execPath, [main, '--version'], { encoding: 'utf8' }).trim(), `auris ${pkg.version}`);
  });
});

describe('a WAV cut short (real pipeline)', () => {
  it('is analysed up to the cut, with warning TRUNCATED_AUDIO on the job record; a whole file has no warning', async () => {
    const dir = tempDir();
    const server = await startServer(dir.path, { config: { concurrency: 1 } }); // the real analyzer
    try {
      const whole = readFileSync(sox(join(dir.path, 'tone.wav'), 16000, 1, 'synth', '3', 'sine', '300', 'vol', '0.5'));
      const cut = whole.subarray(0, 44 + 2 * 16000 * 1.8); // 1.8 s of the 3 s its header declares
      const results = async (audio: Buffer) => {
        const job = (await (await createJob(server, KEY_A, { audio })).json()) as JobJson;
        const done = (await waitForJob(server, KEY_A, job.job_id, undefined, 60_000)) as JobJson & { warnings: Array<{ code: string; message: string }> };
        assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
        const body = (await (await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}/results`)).json()) as { result: { channels: Record<string, { time_series: unknown[] }> } };
        return { done, steps: body.result.channels['0']!.time_series.length };
      };
      const t = await results(cut);
      assert.deepEqual(t.done.warnings.map((w) => w.code), ['TRUNCATED_AUDIO']);
      assert.match(t.done.warnings[0]!.message, /ends before/);
      assert.equal(t.done.audio!.duration_sec, 1.8);
      assert.equal(t.steps, Math.ceil(1800 / 1024));
      const w = await results(whole);
      assert.deepEqual(w.done.warnings, []);
      assert.equal(w.done.audio!.duration_sec, 3);
      assert.equal(w.steps, Math.ceil(3000 / 1024));
    } finally {
      await server.close();
      dir.cleanup();
    }
  });
});
