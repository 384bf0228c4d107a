/**
 * Failed-authentication throttling per client address (docs/reliability.md, docs/api.md):
 * after AUTH_FAILURE_LIMIT requests with a missing or wrong key within the window, the address
 * gets 429 TOO_MANY_AUTH_FAILURES (problem+json, Retry-After), even with a valid key, until the
 * window has passed; another address is not affected. Real server on 127.0.0.1; the second
 * client connects from 127.0.0.2.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { after, before, describe, it } from 'node:test';
import { AuthFailureThrottle, clientKey } from '../../src/http/auth-throttle';
import type { AurisServer } from '../../src/http/server';
import { FakeAnalyzer, KEY_A, sleep, startServer, tempDir } from '../http/helpers';

/** GET with a key, from a chosen local address. */
function get(server: AurisServer, path: string, key: string | null, localAddress = '127.0.0.1'): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const u = new URL(server.url + path);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, localAddress, headers: key ? { 'x-api-key': key } : {}, agent: false }, (res) => {
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

  it('answers 429 problem+json with Retry-After once an address used up its failures, even for a valid key; others are served; it ends with the window', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await get(server, '/file-processing/jobs', i % 2 ? 'wrong-key-000' + i : null)).status);
    assert.deepEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401]);
    assert.deepEqual(new Set(statuses.slice(5)), new Set([429]));

    const blocked = await get(server, '/file-processing/jobs', KEY_A);
    assert.equal(blocked.status, 429, 'a valid key is not looked at while the address is throttled');
    assert.match(String(blocked.headers['content-type']), /application\/problem\+json/);
    const p = JSON.parse(blocked.body) as { code: string; retry_after: number };
    assert.equal(p.code, 'TOO_MANY_AUTH_FAILURES');
    const retryAfter = Number(blocked.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 2, String(retryAfter));
    assert.equal(p.retry_after, retryAfter);

    assert.equal((await get(server, '/healthz', null)).status, 200, 'operations endpoints are not throttled');
    assert.equal((await get(server, '/file-processing/jobs', KEY_A, '127.0.0.2')).status, 200, 'another address is served');

    await sleep(retryAfter * 1000 + 100);
    assert.equal((await get(server, '/file-processing/jobs', KEY_A)).status, 200, 'served again once the window has passed');
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
  it('after the limit, ListModels from that address gets RESOURCE_EXHAUSTED TOO_MANY_AUTH_FAILURES even with a valid key; the peer address is what counts', async () => {
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
      assert.equal(valid, exhausted, 'a valid key is not looked at while the address is throttled');
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
