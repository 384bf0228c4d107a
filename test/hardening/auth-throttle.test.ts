/**
 * Failed-authentication throttling per client address (docs/reliability.md, docs/api.md):
 * after AUTH_FAILURE_LIMIT requests with a missing or wrong key within the window, the address's
 * failures get 429 TOO_MANY_AUTH_FAILURES (problem+json, Retry-After) until the window has
 * passed; a valid key from that address is always served (one keyless client behind a NAT must
 * not lock out every tenant). X-Forwarded-For counts only from a TRUST_PROXY address. A request
 * reset by its client before it is handled is no server error. Real server on 127.0.0.1; other
 * clients connect from 127.0.0.2.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { after, before, describe, it } from 'node:test';
import { AuthFailureThrottle, clientKey } from '../../src/http/auth-throttle';
import type { AurisServer } from '../../src/http/server';
import { FakeAnalyzer, KEY_A, KEY_B, sleep, startServer, tempDir } from '../http/helpers';

/** GET with a key, from a chosen local address. */
function get(server: AurisServer, path: string, key: string | null, localAddress = '127.0.0.1', extra: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const u = new URL(server.url + path);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, localAddress, headers: { ...(key ? { 'x-api-key': key } : {}), ...extra }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('failed-authentication throttling', () => {
  const dir = tempDir('auris-auththrottle-');
  let server: AurisServer;
  before(async () => {
    server = await startServer(dir.path, { analyzer: new FakeAnalyzer(), config: { limits: { authFailureLimit: 5, authFailureWindowSec: 2 } } });
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  it('answers 429 problem+json with Retry-After to the failures of an address that used up its limit; valid keys from it are served; it ends with the window', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await get(server, '/file-processing/jobs', i % 2 ? 'wrong-key-000' + i : null)).status);
    assert.deepEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401]);
    assert.deepEqual(new Set(statuses.slice(5)), new Set([429]));

    for (let i = 0; i < 100; i++) await get(server, '/file-processing/jobs', 'wrong-key-x' + i);
    assert.equal((await get(server, '/file-processing/jobs', KEY_A)).status, 200, 'a valid key is served although its address is throttled');
    assert.equal((await get(server, '/file-processing/jobs', KEY_B)).status, 200, 'so is another tenant behind the same address');
    const blocked = await get(server, '/file-processing/jobs', 'wrong-key-again');
    assert.equal(blocked.status, 429);
    assert.match(String(blocked.headers['content-type']), /application\/problem\+json/);
    const p = JSON.parse(blocked.body) as { code: string; retry_after: number };
    assert.equal(p.code, 'TOO_MANY_AUTH_FAILURES');
    const retryAfter = Number(blocked.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 2, String(retryAfter));
    assert.equal(p.retry_after, retryAfter);

    assert.equal((await get(server, '/healthz', null)).status, 200, 'operations endpoints are not throttled');
    assert.equal((await get(server, '/file-processing/jobs', KEY_A, '127.0.0.2')).status, 200, 'another address is served');

    await sleep(retryAfter * 1000 + 100);
    assert.equal((await get(server, '/file-processing/jobs', 'wrong-key-later')).status, 401, 'a failure is 401 again once the window has passed');
  });

  it('counts IPv6 clients per /64 and IPv4-mapped addresses as IPv4', () => {
    assert.equal(clientKey('2001:db8:1:2:aaaa::1'), clientKey('2001:db8:1:2:bbbb::2'));
    assert.notEqual(clientKey('2001:db8:1:2::1'), clientKey('2001:db8:1:3::1'));
    assert.equal(clientKey('::ffff:192.0.2.7'), '192.0.2.7');
    const t = new AuthFailureThrottle(2, 1000);
    t.fail('2001:db8:1:2::1', 0);
    assert.equal(t.fail('2001:db8:1:2::9', 10), true);
    assert.equal(t.blockedFor('2001:db8:1:2::5', 20), 1);
    assert.equal(t.blockedFor('2001:db8:1:2::5', 1000), 0);
  });
});

describe('failed-authentication throttling over gRPC (shared with REST in src/app.ts)', () => {
  it('after the limit, failed ListModels from that address get RESOURCE_EXHAUSTED TOO_MANY_AUTH_FAILURES, a valid key is served; the peer address is what counts', async () => {
    const { startServer: startGrpc, API_KEY, errorCodeOf } = await import('../grpc/helpers');
    const { listModels } = await import('../../src/grpc/client');
    const throttle = new AuthFailureThrottle(3, 60_000);
    const ts = await startGrpc({ authThrottle: throttle });
    try {
      const codes: string[] = [];
      for (let i = 0; i < 5; i++) {
        await listModels(ts.client, i % 2 ? 'wrong-key' : undefined).then(
          () => codes.push('OK'),
          (e: grpc.StatusObject) => codes.push(`${e.code}:${errorCodeOf(e)}`),
        );
      }
      const unauth = `${grpc.status.UNAUTHENTICATED}`;
      const exhausted = `${grpc.status.RESOURCE_EXHAUSTED}:TOO_MANY_AUTH_FAILURES`;
      assert.deepEqual(codes, [`${unauth}:MISSING_API_KEY`, `${unauth}:INVALID_API_KEY`, `${unauth}:MISSING_API_KEY`, exhausted, exhausted]);
      const valid = await listModels(ts.client, API_KEY).then(() => 'OK', (e: grpc.StatusObject) => `${e.code}:${errorCodeOf(e)}`);
      assert.equal(valid, 'OK', 'a valid key is served although its address is throttled');
      assert.ok(throttle.blockedFor('127.0.0.1') > 0);
      assert.equal(throttle.blockedFor('127.0.0.2'), 0, 'another address is not affected');
    } finally {
      await ts.close();
    }
  });

  it('peerAddress reads the client address of a gRPC peer string', async () => {
    const { peerAddress } = await import('../../src/grpc/server');
    assert.equal(peerAddress('ipv4:127.0.0.1:51234'), '127.0.0.1');
    assert.equal(peerAddress('ipv6:[::1]:51234'), '::1');
    assert.equal(peerAddress('ipv6:[2001:db8::7]:443'), '2001:db8::7');
  });
});

describe('client addresses behind a reverse proxy (TRUST_PROXY)', () => {
  const dir = tempDir('auris-trustproxy-');
  let plain: AurisServer;
  let proxied: AurisServer;
  before(async () => {
    const limits = { authFailureLimit: 3, authFailureWindowSec: 60 };
    plain = await startServer(dir.path + '/plain', { analyzer: new FakeAnalyzer(), config: { limits } });
    proxied = await startServer(dir.path + '/proxied', { analyzer: new FakeAnalyzer(), config: { limits, trustProxy: ['127.0.0.1'] } });
  });
  after(async () => {
    await plain.close();
    await proxied.close();
    dir.cleanup();
  });

  it('by default X-Forwarded-For is ignored: a flood "from" many forwarded addresses counts against the connection address', async () => {
    for (let i = 0; i < 5; i++) await get(plain, '/file-processing/jobs', null, '127.0.0.1', { 'x-forwarded-for': `198.51.100.${i}` });
    assert.equal((await get(plain, '/file-processing/jobs', null, '127.0.0.1', { 'x-forwarded-for': '198.51.100.77' })).status, 429);
    assert.equal((await get(plain, '/file-processing/jobs', KEY_A, '127.0.0.1', { 'x-forwarded-for': '198.51.100.1' })).status, 200);
  });

  it('with TRUST_PROXY=127.0.0.1 the forwarded client is throttled alone; another client behind the same proxy gets 401, not 429', async () => {
    const flood = { 'x-forwarded-for': '198.51.100.9' };
    for (let i = 0; i < 5; i++) await get(proxied, '/file-processing/jobs', null, '127.0.0.1', flood);
    assert.equal((await get(proxied, '/file-processing/jobs', null, '127.0.0.1', flood)).status, 429);
    assert.equal((await get(proxied, '/file-processing/jobs', 'wrong-key-other', '127.0.0.1', { 'x-forwarded-for': '203.0.113.5' })).status, 401);
    assert.equal((await get(proxied, '/file-processing/jobs', KEY_A, '127.0.0.1', flood)).status, 200);
    // From an address that is not a trusted proxy the header means nothing.
    for (let i = 0; i < 3; i++) await get(proxied, '/file-processing/jobs', null, '127.0.0.2', { 'x-forwarded-for': `203.0.113.${i}` });
    assert.equal((await get(proxied, '/file-processing/jobs', null, '127.0.0.2', { 'x-forwarded-for': '203.0.113.99' })).status, 429);
  });

  it('TRUST_PROXY entries are checked at start', async () => {
    const { loadConfig } = await import('../../src/config');
    assert.deepEqual(loadConfig([], { TRUST_PROXY: '10.0.0.0/8, loopback,::1' }).trustProxy, ['10.0.0.0/8', 'loopback', '::1']);
    assert.throws(() => loadConfig([], { TRUST_PROXY: 'proxy.local' }), /TRUST_PROXY/);
    assert.throws(() => loadConfig([], { TRUST_PROXY: '10.0.0.0/33' }), /TRUST_PROXY/);
    assert.deepEqual(loadConfig([], {}).trustProxy, []);
  });
});

describe('requests reset by their client before they are handled', () => {
  const dir = tempDir('auris-reset-');
  const logs: Array<{ level: number; msg: string }> = [];
  let server: AurisServer;
  before(async () => {
    const stream = new Writable({
      write(chunk, _enc, cb) {
        for (const line of String(chunk).split('\n').filter(Boolean)) logs.push(JSON.parse(line) as { level: number; msg: string });
        cb();
      },
    });
    server = await startServer(dir.path, { analyzer: new FakeAnalyzer(), logger: { level: 'debug', stream } });
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  it('50 requests reset at once: no 500, no error-level log, the server keeps serving', async () => {
    const u = new URL(server.url);
    for (let i = 0; i < 50; i++) {
      await new Promise<void>((resolve) => {
        const socket = connect({ host: u.hostname, port: Number(u.port) }, () => {
          socket.write(`GET /file-processing/jobs HTTP/1.1\r\nHost: x\r\nx-api-key: wrong-key-${i}\r\n\r\n`);
          socket.resetAndDestroy();
        });
        socket.on('error', () => undefined);
        socket.on('close', () => resolve());
      });
    }
    await sleep(300);
    assert.equal((await get(server, '/file-processing/jobs', KEY_A)).status, 200);
    const errors = logs.filter((l) => l.level >= 50);
    assert.deepEqual(errors.map((l) => l.msg), [], 'no error-level log line');
    assert.equal(logs.some((l) => (l as { res?: { statusCode?: number } }).res?.statusCode === 500), false, 'no 500 answered');
  });
});
