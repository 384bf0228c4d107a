/**
 * Distributed mode: stream tokens in the shared KV bucket (src/jobs/nats/stream-tokens.ts). A token
 * issued by one API node opens a WebSocket stream on another, once; two nodes redeeming it at the
 * same moment: exactly one wins; expired and unknown tokens are refused; the bucket's max age
 * follows the longest token lifetime; with NATS down the stream is refused as UNAVAILABLE
 * (close 4503) and POST /stream-tokens answers 503.
 */
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { startApp, type AurisApp } from '../../src/app';
import { defaultConfig } from '../../src/config';
import type { NatsBackends } from '../../src/jobs/nats';
import { silentLogger } from '../../src/jobs/nats/connection';
import { SharedStreamTokens } from '../../src/jobs/nats/stream-tokens';
import { envSkip } from '../env';
import { KEY_A, wsStream } from '../websocket/helpers';
import { useNatsServer } from './fixture';
import { natsUnavailable } from './server';

const skip = envSkip(natsUnavailable());
const OWNER = { organization_id: 'org-a', project_id: 'proj-a', key_id: 'key-a' };
const Q = { models: 'speech', output_period: '256', sample_rate: '16000' };
/** 2 s of a 300 Hz tone, s16le 16 kHz. */
const TONE = (() => {
  const b = Buffer.alloc(32000 * 2);
  for (let i = 0; i < 32000; i++) b.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 16000)), i * 2);
  return b;
})();

describe('stream tokens shared by the API nodes (NATS KV)', { skip }, () => {
  const nats = useNatsServer({ prefix: 'tok', requestTimeoutMs: 1000 });
  const backends = (): Promise<NatsBackends> => nats.node();
  const store = async (ttlSec = 60, maxPerKey = 1000): Promise<SharedStreamTokens> => {
    const b = await backends();
    return SharedStreamTokens.open(b.conn, b.settings, ttlSec, silentLogger, maxPerKey);
  };

  it('issued on one node, redeemed on another, once; unknown and expired tokens give null; the per-key cap', async () => {
    const [a, b] = [await store(), await store()];
    const t = (await a.issue(OWNER))!;
    assert.match(t.token, /^st_[\w-]{43}$/);
    assert.equal(t.expires_in, 60);
    assert.deepEqual(await b.redeem(t.token), OWNER);
    assert.equal(await a.redeem(t.token), null, 'single use, whichever node asks');
    assert.equal(await b.redeem('st_forged'), null);
    const old = (await a.issue(OWNER, Date.now() - 61_000))!;
    assert.equal(await b.redeem(old.token), null, 'expired');
    const capped = await store(60, 2);
    assert.ok(await capped.issue(OWNER));
    assert.ok(await capped.issue(OWNER));
    assert.equal(await capped.issue(OWNER), null, 'a key holds at most maxPerKey unused tokens of one node');
    assert.ok(await capped.issue({ ...OWNER, key_id: 'key-b' }), 'per key');
  });

  it('two nodes redeeming one token at the same moment: exactly one gets the owner', async () => {
    const nodes = [await store(), await store(), await store()];
    for (let i = 0; i < 20; i++) {
      const t = (await nodes[i % 3]!.issue(OWNER))!;
      const got = await Promise.all(nodes.map((s) => s.redeem(t.token)));
      assert.equal(got.filter((o) => o !== null).length, 1, `token ${i}: ${JSON.stringify(got)}`);
    }
  });

  it("the bucket keeps entries as long as the longest node's token lifetime", async () => {
    await store(60);
    const b = await backends();
    await SharedStreamTokens.open(b.conn, b.settings, 600, silentLogger);
    const info = await b.conn.jsm.streams.info('KV_tok_stream_tokens');
    assert.ok(info.config.max_age >= 600e9, `max_age ${info.config.max_age} ns`);
    await SharedStreamTokens.open(b.conn, b.settings, 60, silentLogger);
    assert.ok((await b.conn.jsm.streams.info('KV_tok_stream_tokens')).config.max_age >= 600e9, 'never lowered');
  });

  describe('two API nodes with live streaming', () => {
    const apps: AurisApp[] = [];
    const dirs: string[] = [];
    const node = async (): Promise<AurisApp & { wsUrl: string }> => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-tokens-node-'));
      dirs.push(dataDir);
      const app = await startApp({
        logger: false,
        backends: await backends(),
        config: defaultConfig({ host: '127.0.0.1', port: 0, grpcPort: 0, dataDir, concurrency: 0, apiKeys: [{ key: KEY_A, organizationId: 'org-a', projectId: 'proj-a' }], logLevel: 'silent' }),
        streaming: { inferenceThreads: 1, grpc: false },
      });
      apps.push(app);
      return Object.assign(app, { wsUrl: app.url.replace(/^http/, 'ws') });
    };
    after(async () => {
      for (const app of apps) await app.close();
      for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
    });

    it('a token from node A opens a stream on node B (results for all its audio), once; NATS down: 4503 UNAVAILABLE, POST 503', async () => {
      const [a, b] = [await node(), await node()];
      const token = async (): Promise<string> => {
        const res = await fetch(`${a.url}/stream-tokens`, { method: 'POST', headers: { 'x-api-key': KEY_A } });
        assert.equal(res.status, 201);
        return ((await res.json()) as { token: string }).token;
      };
      const t = await token();
      // The audio goes out as soon as the socket opens, before the token is redeemed: nothing may be lost.
      const ok = await wsStream(b.wsUrl, { ...Q, token: t }, TONE, { apiKey: null, chunks: Array(50).fill(TONE.length / 50) });
      assert.equal(ok.closeCode, 1000, JSON.stringify(ok.error));
      assert.equal(ok.steps.length, 8, '2 s at 256 ms');
      assert.ok(ok.steps.every((s) => s.results.speech!.result !== 'silence'), JSON.stringify(ok.steps.map((s) => s.results.speech)));
      const again = await wsStream(a.wsUrl, { ...Q, token: t }, TONE, { apiKey: null });
      assert.equal(again.error?.code, 'INVALID_STREAM_TOKEN');
      assert.equal(again.closeCode, 4401);

      const pending = await token();
      await nats.server.stop();
      try {
        const down = await wsStream(b.wsUrl, { ...Q, token: pending }, TONE, { apiKey: null });
        assert.equal(down.error?.code, 'UNAVAILABLE', JSON.stringify(down.messages));
        assert.equal(down.closeCode, 4503);
        assert.match(down.error!.message, /could not be checked/);
        assert.equal(down.steps.length, 0);
        const res = await fetch(`${a.url}/stream-tokens`, { method: 'POST', headers: { 'x-api-key': KEY_A } });
        assert.equal(res.status, 503);
        assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
        assert.ok(Number(res.headers.get('retry-after')) > 0);
      } finally {
        await nats.server.start();
      }
    });
  });
});
