/**
 * Hostile HTTP clients (docs/reliability.md): slowloris headers and bodies time out, oversized
 * headers and bodies are refused, malformed JSON / wrong Content-Type / query injection give
 * problem+json, security headers are set, API keys never reach the logs. Real sockets on
 * 127.0.0.1; timeouts are made short through ServerOptions.httpTimeouts. No timing is asserted:
 * each slow client only has a generous upper bound after which the test fails.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { AurisServer } from '../../src/http/server';
import { api, FakeAnalyzer, KEY_A, KEY_B, sleep, startServer, tempDir } from '../http/helpers';


interface RawResult {
  data: string;
  closed: boolean;
}

/** Opens a raw socket, runs `drive` (which may trickle bytes), resolves when the server closes it. */
function rawClient(url: string, drive: (s: Socket, stopped: () => boolean) => Promise<void>, boundMs = 20_000): Promise<RawResult> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), hostname);
    let data = '';
    let done = false;
    const bound = setTimeout(() => {
      done = true;
      s.destroy();
      reject(new Error(`server kept the slow connection open for more than ${boundMs} ms; got: ${data.slice(0, 200)}`));
    }, boundMs);
    s.setEncoding('latin1');
    s.on('data', (d: string) => (data += d));
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(bound);
      if (!done) resolve({ data, closed: true });
      done = true;
    });
    s.on('connect', () => {
      drive(s, () => done || s.destroyed).catch(() => {});
    });
  });
}

async function trickle(s: Socket, stopped: () => boolean, chunk: string, everyMs: number): Promise<void> {
  while (!stopped()) {
    if (!s.write(chunk)) await sleep(everyMs);
    await sleep(everyMs);
  }
}

/** Checks a raw HTTP answer: problem+json with `status` and `code`. */
function rawProblem(data: string, status: number, code: string): void {
  const [head, body] = [data.slice(0, data.indexOf('\r\n\r\n')), data.slice(data.indexOf('\r\n\r\n') + 4)];
  assert.match(head, /content-type: application\/problem\+json/i, head);
  const p = JSON.parse(body) as { status: number; code: string; type: string };
  assert.equal(p.status, status);
  assert.equal(p.code, code);
}

async function problem(res: Response, status: number, code?: string): Promise<Record<string, unknown>> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
  const body = JSON.parse(text) as Record<string, unknown>;
  assert.equal(body.status, status);
  if (code) assert.equal(body.code, code);
  return body;
}

describe('hostile HTTP clients', () => {
  const dir = tempDir('auris-hardening-http-');
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  let server: AurisServer;
  const analyzer = new FakeAnalyzer();

  before(async () => {
    server = await startServer(dir.path, {
      analyzer,
      logger: { level: 'trace', stream },
      httpTimeouts: { headersMs: 600, requestMs: 1500, connectionMs: 3000, keepAliveMs: 500, checkIntervalMs: 100 },
      config: { limits: { maxUploadBytes: 64 * 1024 } },
    });
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  it('slow headers (slowloris): the server answers 408 or closes, and keeps serving others', async () => {
    const r = await rawClient(server.url, async (s, stopped) => {
      s.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      await trickle(s, stopped, 'X-Slow: a\r\n', 100);
    });
    assert.ok(r.closed);
    if (r.data) {
      assert.match(r.data, /^HTTP\/1\.1 408/);
      rawProblem(r.data, 408, 'REQUEST_TIMEOUT');
    }
    assert.equal((await fetch(server.url + '/healthz')).status, 200);
  });

  it('a connection that sends nothing is closed', async () => {
    const r = await rawClient(server.url, async () => {});
    assert.ok(r.closed);
  });

  it('slow upload body: closed before it completes, and no job is kept', async () => {
    const r = await rawClient(server.url, async (s, stopped) => {
      s.write(
        'POST /file-processing/jobs?models=speech&output_period=1024 HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
          `x-api-key: ${KEY_B}\r\ncontent-type: audio/wav\r\ncontent-length: 60000\r\n\r\nRIFF\0\0\0\0WAVE`,
      );
      await trickle(s, stopped, '\0'.repeat(16), 100);
    });
    assert.ok(r.closed);
    if (r.data) assert.match(r.data, /^HTTP\/1\.1 (408|400)/);
    await sleep(200);
    const list = await api(server, KEY_B)('/file-processing/jobs');
    assert.equal(list.status, 200);
    const body = (await list.json()) as { jobs?: unknown[]; items?: unknown[] } | unknown[];
    const jobs = Array.isArray(body) ? body : (body.jobs ?? body.items ?? []);
    assert.equal(jobs.length, 0, JSON.stringify(body));
  });

  it('slow JSON body: closed before it completes', async () => {
    const r = await rawClient(server.url, async (s, stopped) => {
      s.write(
        'POST /file-processing/jobs?models=speech&output_period=1024 HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
          `x-api-key: ${KEY_B}\r\ncontent-type: application/json\r\ncontent-length: 5000\r\n\r\n{"url": "`,
      );
      await trickle(s, stopped, 'a', 100);
    });
    assert.ok(r.closed);
    if (r.data) assert.match(r.data, /^HTTP\/1\.1 (408|400)/);
  });

  it('oversized headers: 431 problem+json HEADERS_TOO_LARGE', async () => {
    const r = await rawClient(server.url, async (s) => {
      s.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(40 * 1024)}\r\n\r\n`);
    });
    assert.match(r.data, /^HTTP\/1\.1 431/);
    rawProblem(r.data, 431, 'HEADERS_TOO_LARGE');
  });

  it('a request Node cannot parse: 400 problem+json MALFORMED_REQUEST', async () => {
    for (const bad of ['GET /healthz HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n', 'BLAH\x00 / HTTP/1.1\r\n\r\n', 'POST /file-processing/jobs HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n']) {
      const r = await rawClient(server.url, async (s) => {
        s.write(bad);
      });
      assert.match(r.data, /^HTTP\/1\.1 400/, JSON.stringify(bad));
      rawProblem(r.data, 400, 'MALFORMED_REQUEST');
    }
  });

  it('HTTP/1.1 without Host: 400 problem+json MALFORMED_REQUEST (was an empty body)', async () => {
    const r = await rawClient(server.url, async (s) => {
      s.write('GET /healthz HTTP/1.1\r\n\r\n');
    });
    assert.match(r.data, /^HTTP\/1\.1 400/);
    rawProblem(r.data, 400, 'MALFORMED_REQUEST');
    assert.match(r.data, /Host header/);
  });

  it('an Expect header other than 100-continue: 417 problem+json EXPECTATION_FAILED (was an empty body)', async () => {
    const r = await rawClient(server.url, async (s) => {
      s.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 999-nope\r\n\r\n');
    });
    assert.match(r.data, /^HTTP\/1\.1 417/);
    rawProblem(r.data, 417, 'EXPECTATION_FAILED');
  });

  it('a long query string: 431 names the URL, not the headers', async () => {
    const r = await rawClient(server.url, async (s) => {
      s.write(`GET /file-processing/jobs?limit=1&x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    });
    rawProblem(r.data, 431, 'HEADERS_TOO_LARGE');
    assert.match(r.data, /request URL is too long/);
  });

  it('a repeated query parameter: 400 naming it "given more than once"', async () => {
    const body = await problem(await api(server, KEY_A)('/file-processing/jobs?models=speech&output_period=1024&output_period=2048', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"url":"http://127.0.0.1/a.wav"}' }), 400, 'INVALID_PARAMETER');
    assert.deepEqual(body.errors, [{ parameter: 'output_period', message: 'given more than once' }]);
    const list = await problem(await api(server, KEY_A)('/file-processing/jobs?limit=1&limit=2'), 400, 'INVALID_PARAMETER');
    assert.deepEqual(list.errors, [{ parameter: 'limit', message: 'given more than once' }]);
  });

  it('a JSON object with __proto__ (or constructor, also nested): 400 naming the key, not "must be a JSON object"', async () => {
    for (const [body, key] of [
      ['{"url":"http://127.0.0.1/a.wav","__proto__":{"x":1}}', '__proto__'],
      ['{"url":"http://127.0.0.1/a.wav","constructor":{"prototype":{}}}', 'constructor'],
      ['{"url":"http://127.0.0.1/a.wav","metadata":{"__proto__":{"x":"1"}}}', 'metadata.__proto__'],
    ]) {
      const p = await problem(await api(server, KEY_A)('/file-processing/jobs?models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': 'application/json' }, body }), 400, 'INVALID_BODY');
      assert.deepEqual(p.errors, [{ parameter: key, message: 'unknown field' }]);
      assert.doesNotMatch(String(p.detail), /must be a JSON object/);
    }
  });

  it('oversized JSON body (> 1 MiB): 413 problem+json', async () => {
    const body = JSON.stringify({ url: 'http://127.0.0.1/' + 'a'.repeat(1100 * 1024) });
    await problem(await api(server, KEY_A)('/file-processing/jobs?models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': 'application/json' }, body }), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('oversized upload (declared and undeclared length): 413 problem+json, nothing kept', async () => {
    const big = Buffer.alloc(200 * 1024);
    big.write('RIFF', 0);
    big.write('WAVE', 8);
    await problem(await api(server, KEY_B)('/file-processing/jobs?models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': 'audio/wav' }, body: big }), 413, 'PAYLOAD_TOO_LARGE');
    // chunked: no Content-Length, the limit applies while streaming
    const chunked = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new Uint8Array(big.subarray(i * 20480, (i + 1) * 20480)));
        c.close();
      },
    });
    const res = await api(server, KEY_B)('/file-processing/jobs?models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': 'audio/wav' }, body: chunked, duplex: 'half' } as RequestInit);
    await problem(res, 413, 'PAYLOAD_TOO_LARGE');
    const list = (await (await api(server, KEY_B)('/file-processing/jobs')).json()) as { jobs?: unknown[] };
    assert.equal((list.jobs ?? []).length, 0);
  });

  for (const [name, body] of [
    ['truncated', '{"url": '],
    ['not JSON', 'url=http://x'],
    ['an array', '[1,2,3]'],
    ['deeply nested', '['.repeat(5000) + ']'.repeat(5000)],
    ['__proto__ pollution', '{"url": "http://127.0.0.1/a.wav", "__proto__": {"polluted": 1}, "constructor": {"prototype": {"polluted": 1}}}'],
  ]) {
    it(`malformed JSON (${name}): 400 problem+json, nothing polluted`, async () => {
      await problem(await api(server, KEY_A)('/file-processing/jobs?models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': 'application/json' }, body }), 400);
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });
  }

  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'audio/x-unknown']) {
    it(`wrong Content-Type ${type}: 4xx problem+json`, async () => {
      const res = await api(server, KEY_A)('/file-processing/jobs?models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': type }, body: 'hello' });
      const text = await res.text();
      assert.ok(res.status === 415 || res.status === 400, `${res.status} ${text}`);
      assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
    });
  }

  for (const q of [
    "models=speech'%20OR%201=1--&output_period=1024",
    'models=speech;rm%20-rf%20/&output_period=1024',
    'models[$ne]=x&output_period=1024',
    'models=speech&output_period=1024&__proto__[polluted]=1',
    'models=speech&output_period=1024&constructor[prototype][polluted]=1',
    'models=%00speech&output_period=1024',
    'models=speech&output_period=Infinity',
    'models=speech&output_period=1024&channel=1e400',
    'models=speech&output_period=1e309',
    `models=${'speech,'.repeat(2000)}speech&output_period=1024`,
    'models=speech&output_period=1024&callback_url=file:///etc/passwd',
    'models=speech&output_period=1024&callback_url=http://169.254.169.254/latest/meta-data/',
  ]) {
    it(`query injection ${q.slice(0, 60)}: 4xx problem+json, server unharmed`, async () => {
      const res = await api(server, KEY_A)(`/file-processing/jobs?${q}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: 'http://127.0.0.1:9/a.wav' }) });
      const text = await res.text();
      assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${text}`);
      assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });
  }

  for (const p of ['/file-processing/jobs/..%2F..%2Fetc%2Fpasswd', '/file-processing/jobs/%E0%A4%A', '/file-processing/jobs/%2e%2e', '/file-processing/jobs/' + 'a'.repeat(5000), "/file-processing/jobs/1'%20OR%20'1'='1/results"]) {
    it(`path injection ${p.slice(0, 50)}: 4xx problem+json`, async () => {
      const res = await api(server, KEY_A)(p);
      const text = await res.text();
      assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${text}`);
      assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
      assert.doesNotMatch(text, /root:/);
    });
  }

  it('security headers on API, problem and operations responses', async () => {
    for (const res of [await fetch(server.url + '/healthz'), await api(server, null)('/file-processing/jobs'), await api(server, KEY_A)('/file-processing/jobs')]) {
      await res.arrayBuffer();
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(res.headers.get('x-frame-options'), 'SAMEORIGIN');
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
      assert.equal(res.headers.get('x-powered-by'), null);
    }
  });

  it('the console keeps its own Content-Security-Policy', async () => {
    const res = await fetch(server.url + '/');
    await res.arrayBuffer();
    if (res.status === 200) {
      assert.match(res.headers.get('content-security-policy') ?? '', /default-src/);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    }
  });

  it('API keys never appear in the logs (valid, invalid, in a 5xx)', async () => {
    const secretBad = 'not-a-key-but-secret-7b1f9c';
    await (await api(server, KEY_A)('/file-processing/jobs')).arrayBuffer();
    await (await api(server, secretBad)('/file-processing/jobs')).arrayBuffer();
    await (await api(server, KEY_A)('/file-processing/jobs?models=speech&output_period=1024', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"url": ' })).arrayBuffer();
    await (await fetch(server.url + '/healthz', { headers: { 'x-api-key': KEY_A, authorization: `Bearer ${KEY_A}` } })).arrayBuffer();
    // A real 5xx: the job store fails unexpectedly; the error is logged with its request.
    const jobs = server.backends.jobs;
    const get = jobs.get;
    jobs.get = () => Promise.reject(new Error('injected store failure'));
    try {
      const res = await api(server, KEY_A)('/file-processing/jobs/00000000-0000-4000-8000-000000000000', { headers: { authorization: `Bearer ${KEY_A}` } });
      assert.ok(res.status >= 500, `status ${res.status}`);
      assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
      assert.doesNotMatch(await res.text(), /injected store failure/, 'no internal detail in the body');
    } finally {
      jobs.get = get;
    }
    await sleep(50);
    const all = logs.join('');
    assert.ok(all.includes('incoming request'), 'the trace logger captured the requests');
    assert.ok(all.includes('injected store failure'), 'the 5xx was logged with its error');
    assert.ok(!all.includes(KEY_A), 'valid key logged');
    assert.ok(!all.includes(secretBad), 'invalid key logged');
  });

  it('the redaction also applies when a request object with headers is logged', async () => {
    server.app.log.info({ req: { headers: { 'x-api-key': KEY_B, authorization: 'Bearer ' + KEY_B } } }, 'probe');
    server.app.log.info({ headers: { 'x-api-key': KEY_B } }, 'probe2');
    await sleep(20);
    const all = logs.join('');
    assert.match(all, /"msg":"probe"/, 'the probe line was logged');
    assert.match(all, /"msg":"probe2"/);
    assert.match(all, /"x-api-key":"\[redacted\]"/, 'the header is there, redacted');
    assert.ok(!all.includes(KEY_B));
  });
});
