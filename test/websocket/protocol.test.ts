/**
 * WebSocket streaming protocol: credentials (x-api-key header, single-use stream tokens, never
 * a key in the URL), parameter validation, bad messages: each refused with a JSON error
 * message carrying the stable code, then the documented 4xxx close code, and no result.
 */
import { strict as assert } from 'node:assert';
import WebSocket from 'ws';
import { after, before, describe, it } from 'node:test';
import { websocketErrorHandler } from '../../src/websocket/socket-errors';
import { KEY_A, startStreamingApp, wsStream } from './helpers';

let app: Awaited<ReturnType<typeof startStreamingApp>>;
const Q = { models: 'speech', output_period: '256', sample_rate: '16000' };
/** 2 s of a 300 Hz tone, s16le 16 kHz. */
const TONE = (() => {
  const b = Buffer.alloc(32000 * 2);
  for (let i = 0; i < 32000; i++) b.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 16000)), i * 2);
  return b;
})();

before(async () => {
  app = await startStreamingApp();
});
after(async () => {
  await app.cleanup();
});

async function token(key = KEY_A): Promise<string> {
  const res = await fetch(`${app.url}/stream-tokens`, { method: 'POST', headers: { 'x-api-key': key } });
  assert.equal(res.status, 201);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const body = (await res.json()) as { token: string; expires_in: number; expires_at: string };
  assert.equal(body.expires_in, 60);
  assert.ok(Date.parse(body.expires_at) > Date.now());
  return body.token;
}

function assertRefused(out: Awaited<ReturnType<typeof wsStream>>, code: string, closeCode: number): void {
  assert.equal(out.error?.code, code, JSON.stringify(out.messages));
  assert.equal(out.closeCode, closeCode);
  assert.equal(out.steps.length, 0, 'no result');
  assert.ok(!out.messages.some((m) => m.type === 'started'), 'no stream started');
}

describe('credentials', () => {
  it('x-api-key header: a stream runs; missing or wrong key: 4401 with MISSING_API_KEY / INVALID_API_KEY', async () => {
    const ok = await wsStream(app.wsUrl, Q, TONE);
    assert.equal(ok.closeCode, 1000);
    assert.equal(ok.steps.length, 8);
    assertRefused(await wsStream(app.wsUrl, Q, TONE, { apiKey: null }), 'MISSING_API_KEY', 4401);
    assertRefused(await wsStream(app.wsUrl, Q, TONE, { apiKey: 'not-a-key' }), 'INVALID_API_KEY', 4401);
  });

  it('stream token: opens one stream; reuse, an unknown token and an API key in the URL are refused', async () => {
    const t = await token();
    const ok = await wsStream(app.wsUrl, { ...Q, token: t }, TONE, { apiKey: null });
    assert.equal(ok.closeCode, 1000, JSON.stringify(ok.error));
    assert.equal(ok.steps.length, 8);
    assertRefused(await wsStream(app.wsUrl, { ...Q, token: t }, TONE, { apiKey: null }), 'INVALID_STREAM_TOKEN', 4401);
    assertRefused(await wsStream(app.wsUrl, { ...Q, token: 'st_forged' }, TONE, { apiKey: null }), 'INVALID_STREAM_TOKEN', 4401);
    const inUrl = await wsStream(app.wsUrl, { ...Q, api_key: KEY_A, token: await token() }, TONE, { apiKey: null });
    assertRefused(inUrl, 'INVALID_PARAMETER', 4400);
    assert.match(inUrl.error!.message, /never accepted in a URL/);
    // Without any other credential too (docs/streaming.md): the key in the URL is named, not "missing".
    for (const name of ['api_key', 'x-api-key']) {
      const alone = await wsStream(app.wsUrl, { ...Q, [name]: KEY_A }, TONE, { apiKey: null });
      assertRefused(alone, 'INVALID_PARAMETER', 4400);
      assert.match(alone.error!.message, /never accepted in a URL/);
    }
  });

  it('a binary frame over 4 MiB: closed with 1009 (message too big), as documented', async () => {
    const code = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${app.wsUrl}/stream?${new URLSearchParams(Q)}`, { headers: { 'x-api-key': KEY_A } });
      ws.on('error', () => undefined);
      ws.on('open', () => ws.send(Buffer.alloc(32 * 1024 * 1024)));
      ws.on('close', (c) => resolve(c));
      setTimeout(() => reject(new Error('no close')), 20_000).unref();
    });
    assert.equal(code, 1009);
  });

  it('the socket error handler leaves a ws protocol error (its close frame already sent) to ws, and ends the socket on any other error', () => {
    const ended: string[] = [];
    const handler = websocketErrorHandler({});
    const socket = (name: string) => ({ terminate: () => void ended.push(name) });
    handler(Object.assign(new RangeError('Max payload size exceeded'), { code: 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' }), socket('too-big'));
    handler(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), socket('reset'));
    assert.deepEqual(ended, ['reset']);
  });

  it('POST /stream-tokens needs the API key (problem+json 401)', async () => {
    for (const headers of [{}, { 'x-api-key': 'nope' }] as Array<Record<string, string>>) {
      const res = await fetch(`${app.url}/stream-tokens`, { method: 'POST', headers });
      assert.equal(res.status, 401);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      const p = (await res.json()) as { code: string };
      assert.ok(['MISSING_API_KEY', 'INVALID_API_KEY'].includes(p.code));
    }
  });
});

describe('parameters and messages', () => {
  const cases: Array<[string, Record<string, string>, string, RegExp]> = [
    ['output_period not a multiple of 64', { ...Q, output_period: '100' }, 'INVALID_PARAMETER', /output_period/],
    ['missing sample_rate', { models: 'speech', output_period: '64' }, 'INVALID_PARAMETER', /sample_rate is required/],
    ['unknown model', { ...Q, models: 'speech,colour' }, 'UNKNOWN_MODEL', /colour/],
    ['unknown encoding', { ...Q, encoding: 'opus' }, 'INVALID_PARAMETER', /encoding "opus" is not supported: use s16le, f32le, mulaw or alaw/],
    ['G.711 at 16 kHz', { ...Q, encoding: 'mulaw' }, 'INVALID_PARAMETER', /needs sample_rate 8000/],
    ['unknown parameter', { ...Q, colour: 'red' }, 'INVALID_PARAMETER', /unknown parameter colour/],
    ['boolean that is not', { ...Q, include_summary: 'yes' }, 'INVALID_PARAMETER', /include_summary must be true or false/],
    ['channel the stream lacks', { ...Q, channels: '2', channel: '2' }, 'INVALID_CHANNEL', /channel 2 does not exist/],
  ];
  for (const [name, query, code, message] of cases) {
    it(`${name}: ${code}, close 4400`, async () => {
      const out = await wsStream(app.wsUrl, query, TONE);
      assertRefused(out, code, 4400);
      assert.match(out.error!.message, message);
    });
  }

  it('a text frame other than {"type":"end"}: INVALID_MESSAGE, close 4400, the message says why', async () => {
    const WebSocket = (await import('ws')).default;
    const ws = new WebSocket(`${app.wsUrl}/stream?${new URLSearchParams(Q)}`, { headers: { 'x-api-key': KEY_A } });
    const msgs: Array<Record<string, unknown>> = [];
    ws.on('message', (d: Buffer) => msgs.push(JSON.parse(d.toString()) as Record<string, unknown>));
    await new Promise((r) => ws.once('open', r));
    ws.send('hello');
    const code = await new Promise<number>((r) => ws.on('close', (c) => r(c)));
    assert.equal(code, 4400);
    assert.equal(msgs.at(-1)!.code, 'INVALID_MESSAGE');
    // the client's mistake, explained as such (not an "internal error")
    assert.match(String(msgs.at(-1)!.message), /^text frames must be \{"type":"end"\}/);
  });

  it('end without audio: EMPTY_AUDIO, close 4400', async () => {
    const out = await wsStream(app.wsUrl, Q);
    assert.equal(out.error?.code, 'EMPTY_AUDIO');
    assert.equal(out.closeCode, 4400);
  });

  it('a plain GET /stream (no upgrade) is not served', async () => {
    const res = await fetch(`${app.url}/stream`);
    assert.equal(res.status, 404);
  });
});

describe('shutdown', () => {
  it('closing the service ends an open WebSocket stream with its results so far, then UNAVAILABLE (4503); new streams cannot start', async () => {
    const own = await startStreamingApp();
    const WebSocket = (await import('ws')).default;
    const ws = new WebSocket(`${own.wsUrl}/stream?${new URLSearchParams(Q)}`, { headers: { 'x-api-key': KEY_A } });
    const msgs: Array<Record<string, unknown>> = [];
    ws.on('message', (d: Buffer) => msgs.push(JSON.parse(d.toString()) as Record<string, unknown>));
    const closed = new Promise<number>((r) => ws.on('close', (c) => r(c)));
    await new Promise((r) => ws.once('open', r));
    await new Promise((r) => ws.send(Buffer.concat([TONE, TONE]), r)); // 4 s
    while (!msgs.some((m) => m.type === undefined)) await new Promise((r) => setTimeout(r, 20));
    await own.cleanup();
    assert.equal(await closed, 4503);
    assert.equal(msgs.at(-1)!.code, 'UNAVAILABLE');
    assert.ok(msgs.filter((m) => m.type === undefined).length >= 1, 'results sent before the end');
    assert.equal(own.hub!.active(), 0);
  });
});
