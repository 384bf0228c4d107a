/**
 * HTTP-level tests of what the console relies on: the static serving of the console
 * (content types, cache headers, CSP, nothing external) and GET /file-processing/jobs.
 */
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { after, before, describe, test } from 'node:test';
import { consolePlugin } from '../../src/http/console';
import type { AurisServer } from '../../src/http/server';
import { createJob, fakeWav, KEY_A, KEY_A2, KEY_B, startServer, tempDir } from '../http/helpers';
import { buildConsole } from './helpers';

describe('console static files', () => {
  let server: AurisServer;
  const dir = tempDir('auris-console-serve-');

  before(async () => {
    buildConsole();
    server = await startServer(dir.path, { startWorker: false });
  });
  after(async () => {
    await server?.close();
    dir.cleanup();
  });

  test('GET / is the page: html, no-cache with an ETag, CSP self, assets under a build path', async () => {
    const res = await fetch(server.url + '/');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /connect-src 'self'/);
    const etag = res.headers.get('etag');
    assert.ok(etag);
    const html = await res.text();
    const m = /<script type="module" src="\/console\/([0-9a-f]{12})\/main\.js"><\/script>/.exec(html);
    assert.ok(m, 'module script under /console/<build>/');
    assert.match(html, new RegExp(`<link rel="stylesheet" href="/console/${m[1]}/style.css">`));
    // Nothing is loaded from elsewhere (no CDN).
    assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//);

    const again = await fetch(server.url + '/', { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    const head = await fetch(server.url + '/', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), 'text/html; charset=utf-8');

    for (const [file, type] of [
      ['main.js', 'text/javascript; charset=utf-8'],
      ['api.js', 'text/javascript; charset=utf-8'],
      ['timeline.js', 'text/javascript; charset=utf-8'],
      ['data.js', 'text/javascript; charset=utf-8'],
      ['style.css', 'text/css; charset=utf-8'],
    ] as const) {
      const a = await fetch(`${server.url}/console/${m[1]}/${file}`);
      assert.equal(a.status, 200, file);
      assert.equal(a.headers.get('content-type'), type, file);
      assert.equal(a.headers.get('cache-control'), 'public, max-age=31536000, immutable', file);
      const body = await a.text();
      assert.doesNotMatch(body, /\b(import|from)\s*\(?\s*['"](https?:)?\/\//, `${file} imports nothing external`);
      assert.doesNotMatch(body, /@import|url\(\s*['"]?(https?:)?\/\//, `${file} loads no external CSS`);
    }

    const stale = await fetch(`${server.url}/console/000000000000/main.js`);
    assert.equal(stale.status, 404);
    assert.match(stale.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(((await stale.json()) as { code: string }).code, 'NOT_FOUND');
    const missing = await fetch(`${server.url}/console/${m[1]}/nope.js`);
    assert.equal(missing.status, 404);
    const traversal = await fetch(`${server.url}/console/${m[1]}/..%2F..%2Fpackage.json`);
    assert.equal(traversal.status, 404);
  });

  test('the console routes stay out of the OpenAPI document', async () => {
    const doc = (await (await fetch(server.url + '/openapi.json')).json()) as { paths: Record<string, unknown> };
    assert.equal(doc.paths['/'], undefined);
    assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith('/console')));
  });

  test('without a build, GET / says how to build it (503)', async () => {
    const app = Fastify({ logger: false });
    await app.register(consolePlugin, { dir: dir.path + '/no-such-build' });
    const res = await app.inject({ method: 'GET', url: '/' });
    assert.equal(res.statusCode, 503);
    assert.match(res.body, /node web\/build\.mjs/);
    await app.close();
  });
});

describe('GET /file-processing/jobs (the console jobs list)', () => {
  let server: AurisServer;
  const dir = tempDir('auris-console-list-');
  const ids: Record<string, string[]> = { a: [], b: [] };

  before(async () => {
    server = await startServer(dir.path, { startWorker: false });
    for (const key of [KEY_A, KEY_B, KEY_A, KEY_A2, KEY_A]) {
      const res = await createJob(server, key, { audio: fakeWav() });
      assert.equal(res.status, 201);
      const id = ((await res.json()) as { job_id: string }).job_id;
      (key === KEY_B ? ids.b! : ids.a!).push(id);
    }
  });
  after(async () => {
    await server?.close();
    dir.cleanup();
  });

  const list = (key: string | null, query = ''): Promise<Response> =>
    fetch(`${server.url}/file-processing/jobs${query}`, { headers: key ? { 'x-api-key': key } : {} });

  test("lists the project's jobs (every key of the project), newest first, records as GET answers them", async () => {
    const res = await list(KEY_A);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const body = (await res.json()) as { jobs: Array<{ job_id: string; created_at: string; status: string }> };
    assert.deepEqual(body.jobs.map((j) => j.job_id).sort(), [...ids.a!].sort());
    for (let i = 1; i < body.jobs.length; i++) assert.ok(body.jobs[i - 1]!.created_at >= body.jobs[i]!.created_at);
    const one = await fetch(`${server.url}/file-processing/jobs/${body.jobs[0]!.job_id}`, { headers: { 'x-api-key': KEY_A } });
    assert.deepEqual(body.jobs[0], await one.json());

    const b = (await (await list(KEY_B)).json()) as { jobs: Array<{ job_id: string }> };
    assert.deepEqual(b.jobs.map((j) => j.job_id), ids.b);
    const a2 = (await (await list(KEY_A2)).json()) as { jobs: unknown[] };
    assert.equal(a2.jobs.length, ids.a!.length);
  });

  test('limit and status filter', async () => {
    const two = (await (await list(KEY_A, '?limit=2')).json()) as { jobs: unknown[] };
    assert.equal(two.jobs.length, 2);
    const queued = (await (await list(KEY_A, '?status=queued')).json()) as { jobs: unknown[] };
    assert.equal(queued.jobs.length, ids.a!.length);
    const failed = (await (await list(KEY_A, '?status=failed')).json()) as { jobs: unknown[] };
    assert.deepEqual(failed.jobs, []);
  });

  test('errors are problems: bad limit, unknown parameter, no key, bad key', async () => {
    for (const q of ['?limit=0', '?limit=1001', '?limit=x', '?status=done', '?foo=1']) {
      const res = await list(KEY_A, q);
      assert.equal(res.status, 400, q);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(((await res.json()) as { code: string }).code, 'INVALID_PARAMETER', q);
    }
    const none = await list(null);
    assert.equal(none.status, 401);
    assert.equal(((await none.json()) as { code: string }).code, 'MISSING_API_KEY');
    const bad = await list('nope');
    assert.equal(((await bad.json()) as { code: string }).code, 'INVALID_API_KEY');
  });

  test('documented in the OpenAPI document as listJobs', async () => {
    const doc = (await (await fetch(server.url + '/openapi.json')).json()) as {
      paths: Record<string, Record<string, { operationId?: string; security?: unknown; responses: Record<string, unknown> }>>;
    };
    const op = doc.paths['/file-processing/jobs']!.get!;
    assert.equal(op.operationId, 'listJobs');
    assert.deepEqual(op.security, [{ ApiKey: [] }]);
    assert.ok(op.responses['200'] && op.responses['401'] && op.responses['400']);
  });
});
