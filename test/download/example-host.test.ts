/**
 * The example file host (examples/file-host.ts) against a real server: it fetches the
 * JWKS, serves the folder to the service's verified downloads only, answers 403 to
 * anything else, and never serves outside its folder; also run as a process.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { startFileHost } from '../../examples/file-host';
import { createJob, FakeAnalyzer, KEY_A, startServer, waitForJob, type JobJson } from '../http/helpers';
import { guardedNet, silenceWav, tempDir } from './helpers';

const EXAMPLE = resolve(__dirname, '..', '..', 'examples', 'file-host.js');

describe('examples/file-host', () => {
  it('serves the folder to verified downloads only', async (t) => {
    const dir = tempDir('auris-example-');
    t.after(() => dir.cleanup());
    const folder = join(dir.path, 'files');
    mkdirSync(join(folder, 'sub'), { recursive: true });
    writeFileSync(join(folder, 'a.wav'), silenceWav(1));
    writeFileSync(join(folder, 'sub', 'b.wav'), silenceWav(1));
    writeFileSync(join(dir.path, 'secret.txt'), 'not for you');
    const net = guardedNet();
    const server = await startServer(join(dir.path, 'data'), { analyzer: new FakeAnalyzer(), download: { resolver: net.resolver, connector: net.connector } });
    t.after(() => server.close());
    const log: Array<{ path: string; status: number; reason?: string }> = [];
    const host = await startFileHost({
      dir: folder,
      organizationId: 'org-a',
      projectId: 'proj-a',
      jwksUrl: `${server.url}/.well-known/jwks.json`,
      onRequest: (e) => log.push(e),
    });
    t.after(() => host.close());

    const run = async (url: string): Promise<JobJson> => {
      const res = await createJob(server, KEY_A, { url });
      assert.equal(res.status, 201);
      return waitForJob(server, KEY_A, ((await res.json()) as JobJson).job_id);
    };
    const ok = await run(`${host.url}/a.wav`);
    assert.equal(ok.status, 'succeeded', JSON.stringify(ok.error));
    assert.equal(ok.source.size_bytes, silenceWav(1).length);
    assert.equal((await run(`${host.url}/sub/b.wav?v=2`)).status, 'succeeded');
    assert.deepEqual(log.map((e) => e.status), [200, 200]);

    // not verified: 403 (no header, junk header); verified but outside the folder or missing: 404
    assert.equal((await fetch(`${host.url}/a.wav`)).status, 403);
    assert.equal((await fetch(`${host.url}/a.wav`, { headers: { 'x-service-request-verification': 'a.b.c' } })).status, 403);
    assert.deepEqual(log.slice(-2).map((e) => e.reason), ['MISSING_TOKEN', 'MALFORMED_TOKEN']);
    const escape = await run(`${host.url}/..%2fsecret.txt`);
    assert.equal(escape.error?.code, 'DOWNLOAD_FAILED');
    assert.match(escape.error!.message, /HTTP 404/);
    const missing = await run(`${host.url}/nope.wav`);
    assert.match(missing.error!.message, /HTTP 404/);
    // another organization's host: 403
    const strict = await startFileHost({ dir: folder, organizationId: 'org-b', projectId: 'proj-b', jwksUrl: `${server.url}/.well-known/jwks.json` });
    t.after(() => strict.close());
    const refused = await run(`${strict.url}/a.wav`);
    assert.equal(refused.error?.code, 'DOWNLOAD_FAILED');
    assert.match(refused.error!.message, /HTTP 403/);
    assert.deepEqual(net.violations, []);
  });

  it('runs as a process (--auris URL)', async (t) => {
    const dir = tempDir('auris-example-');
    t.after(() => dir.cleanup());
    const server = await startServer(join(dir.path, 'data'), { analyzer: new FakeAnalyzer(), startWorker: false });
    t.after(() => server.close());
    const child = spawn(process.execPath, [EXAMPLE, '--dir', dir.path, '--auris', server.url, '--organization', 'org-a', '--project', 'proj-a', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    t.after(() => child.kill('SIGKILL'));
    const url = await new Promise<string>((res, rej) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (m) res(m[1]!);
      });
      child.once('exit', (code) => rej(new Error(`exited ${code}: ${out}`)));
    });
    assert.equal((await fetch(`${url}/x.wav`)).status, 403);
    const usage = spawn(process.execPath, [EXAMPLE], { stdio: ['ignore', 'ignore', 'pipe'] });
    const code = await new Promise<number | null>((r) => usage.once('exit', r));
    assert.equal(code, 2);
  });
});
