/**
 * Stream limits shared by both transports (src/streaming/hub.ts): the per-key concurrent-stream
 * quota and the idle timeouts keep one key's 1,000 idle gRPC calls or 1,000 idle WebSockets from
 * locking another key out; a client that disconnects mid-stream frees its stream at once; a
 * client that stops reading its results is ended by the server (RESOURCE_EXHAUSTED) instead of
 * growing its queue.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import WebSocket from 'ws';
import { openStream } from '../../src/client/stream';
import { apiKeyMetadata, createClient } from '../../src/grpc/client';
import { errorCodeOf, nativeStreams, waitFor } from '../grpc/helpers';
import { KEY_A, KEY_B, startStreamingApp, wsStream } from '../websocket/helpers';

const PER_KEY = 20;
const IDLE_MS = 1500;
const Q = { models: 'speech', output_period: '256', sample_rate: '16000' };

function tone(seconds: number): Buffer {
  const n = Math.round(seconds * 16000);
  const b = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) b.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 16000)), i * 2);
  return b;
}

let app: Awaited<ReturnType<typeof startStreamingApp>>;
before(async () => {
  app = await startStreamingApp({ maxStreamsPerKey: PER_KEY, configTimeoutMs: IDLE_MS, idleTimeoutMs: IDLE_MS, maxStallMs: 1000 });
});
after(async () => {
  await app.cleanup();
});

/** Samples the most streams key A had at once while `run` runs. */
async function peakOfKeyA<T>(run: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = 0;
  const timer = setInterval(() => (peak = Math.max(peak, app.hub!.activeForKey(keyId(KEY_A)))), 5);
  try {
    return { result: await run(), peak };
  } finally {
    clearInterval(timer);
  }
}

/** Key B streams 2 s of audio over both transports; both must succeed. */
async function otherKeyStreams(): Promise<void> {
  const ws = await wsStream(app.wsUrl, Q, tone(2), { apiKey: KEY_B });
  assert.equal(ws.closeCode, 1000, JSON.stringify(ws.error));
  assert.equal(ws.steps.length, 8);
  const g = openStream({ transport: 'grpc', address: `127.0.0.1:${app.grpcPort}`, apiKey: KEY_B }, { models: ['speech'], outputPeriodMs: 256, sampleRate: 16000 });
  await g.write(tone(2));
  g.end();
  let steps = 0;
  for await (const m of g) if (m.type === 'step' && m.final) steps++;
  assert.equal(steps, 8);
}

describe('per-key quota and idle timeouts', () => {
  it('1,000 idle gRPC calls from one key: its quota is admitted, the rest get TOO_MANY_STREAMS, another key streams; the idle ones time out', async () => {
    const base = nativeStreams();
    const client = createClient(`127.0.0.1:${app.grpcPort}`);
    const statuses: Array<Promise<grpc.StatusObject>> = [];
    const calls: grpc.ClientDuplexStream<unknown, unknown>[] = [];
    for (let i = 0; i < 1000; i++) {
      const call = client.Analyze(apiKeyMetadata(KEY_A)) as unknown as grpc.ClientDuplexStream<unknown, unknown>;
      call.on('error', () => undefined);
      call.on('data', () => undefined);
      statuses.push(new Promise((r) => call.on('status', r)));
      calls.push(call);
    }
    const { result: all, peak } = await peakOfKeyA(async () => {
      await waitFor(() => app.hub!.activeForKey(keyId(KEY_A)) === PER_KEY, 10_000, 'the quota to fill');
      await otherKeyStreams();
      return Promise.all(statuses);
    });
    assert.equal(peak, PER_KEY, 'never more than the quota at once');
    const refused = all.filter((s) => errorCodeOf(s) === 'TOO_MANY_STREAMS');
    const idle = all.filter((s) => errorCodeOf(s) === 'IDLE_TIMEOUT');
    assert.equal(refused.length + idle.length, 1000, 'each call was refused or timed out');
    assert.ok(refused.length >= 1000 - 3 * PER_KEY, `most were refused (${refused.length})`);
    assert.ok(refused.every((s) => s.code === grpc.status.RESOURCE_EXHAUSTED));
    assert.ok(idle.length >= PER_KEY, 'the admitted calls that sent no config timed out');
    assert.ok(idle.every((s) => s.code === grpc.status.DEADLINE_EXCEEDED && /no stream config within/.test(s.details)));
    client.close();
    await waitFor(() => app.hub!.active() === 0 && nativeStreams() === base, 5000, 'every stream freed');
  });

  it('1,000 idle WebSockets from one key (configured, no audio): quota, 4429 for the rest, another key streams; the idle ones close with 4408', async () => {
    const base = nativeStreams();
    const sockets: WebSocket[] = [];
    const outcomes: Array<Promise<{ code: number; error?: string }>> = [];
    for (let i = 0; i < 1000; i++) {
      const ws = new WebSocket(`${app.wsUrl}/stream?${new URLSearchParams(Q)}`, { headers: { 'x-api-key': KEY_A } });
      let error: string | undefined;
      ws.on('message', (d: Buffer) => {
        const m = JSON.parse(d.toString()) as { type?: string; code?: string };
        if (m.type === 'error') error = m.code;
      });
      ws.on('error', () => undefined);
      outcomes.push(new Promise((r) => ws.on('close', (code) => r({ code, ...(error ? { error } : {}) }))));
      sockets.push(ws);
    }
    const { result: all, peak } = await peakOfKeyA(async () => {
      await waitFor(() => app.hub!.activeForKey(keyId(KEY_A)) === PER_KEY, 20_000, 'the quota to fill');
      await otherKeyStreams();
      return Promise.all(outcomes);
    });
    assert.equal(peak, PER_KEY, 'never more than the quota at once');
    const refused = all.filter((o) => o.code === 4429 && o.error === 'TOO_MANY_STREAMS').length;
    const idle = all.filter((o) => o.code === 4408 && o.error === 'IDLE_TIMEOUT').length;
    assert.equal(refused + idle, 1000, 'each socket was refused or timed out');
    assert.ok(refused >= 1000 - 5 * PER_KEY, `most were refused (${refused})`);
    assert.ok(idle >= PER_KEY);
    await waitFor(() => app.hub!.active() === 0 && nativeStreams() === base, 5000, 'every stream freed');
  });
});

describe('clients that go away or stop reading', () => {
  it('a WebSocket or gRPC client that disconnects mid-stream: the stream count returns to 0 and the native state is freed', async () => {
    const base = nativeStreams();
    const ws = new WebSocket(`${app.wsUrl}/stream?${new URLSearchParams(Q)}`, { headers: { 'x-api-key': KEY_A } });
    await new Promise((r) => ws.once('open', r));
    ws.send(tone(1));
    const g = openStream({ transport: 'grpc', address: `127.0.0.1:${app.grpcPort}`, apiKey: KEY_A }, { models: ['speech'], outputPeriodMs: 256, sampleRate: 16000 });
    await g.write(tone(1));
    await waitFor(() => app.hub!.active() === 2, 5000, 'both streams running');
    ws.terminate();
    g.close();
    await waitFor(() => app.hub!.active() === 0 && nativeStreams() === base, 5000, 'both streams freed');
    assert.ok((app.hub!.snapshot().streamsEnded['disconnected'] ?? 0) >= 1);
    assert.ok((app.hub!.snapshot().streamsEnded['cancelled'] ?? 0) >= 1, JSON.stringify(app.hub!.snapshot().streamsEnded));
  });

  it('a WebSocket client that sends faster than real time and never reads: the server ends it with RESOURCE_EXHAUSTED (4413)', async () => {
    const ended = app.hub!.snapshot().streamsEnded['RESOURCE_EXHAUSTED'] ?? 0;
    const ws = new WebSocket(`${app.wsUrl}/stream?${new URLSearchParams({ ...Q, models: 'speech,arousal,gender', output_period: '64', include_raw_values: 'true' })}`, { headers: { 'x-api-key': KEY_A } });
    const msgs: Array<{ type?: string; code?: string }> = [];
    ws.on('message', (d: Buffer) => msgs.push(JSON.parse(d.toString()) as { type?: string; code?: string }));
    const closed = new Promise<number>((r) => ws.on('close', (c) => r(c)));
    await new Promise((r) => ws.once('open', r));
    ws.pause(); // stop reading: results fill the socket buffers (several MB on loopback), then the server's queue
    const minute = tone(60);
    void (async () => {
      // Up to an hour of audio, a minute per frame, each sent once the previous one is taken.
      for (let i = 0; i < 60 && ws.readyState === WebSocket.OPEN; i++) await new Promise((r) => ws.send(minute, r));
    })();
    await waitFor(() => (app.hub!.snapshot().streamsEnded['RESOURCE_EXHAUSTED'] ?? 0) === ended + 1, 60_000, 'the server to end the stream');
    assert.equal(app.hub!.active(), 0);
    ws.resume();
    assert.equal(await closed, 4413);
    assert.equal(msgs.at(-1)!.code, 'RESOURCE_EXHAUSTED');
    assert.ok(msgs.filter((m) => m.type === undefined).length < 60 * 60 * 15, 'the server stopped producing results');
  });
});

/** The hub's key id of an API key (src/http/auth.ts: the first 16 hex digits of its SHA-256). */
function keyId(key: string): string {
  return app.rest.keys.lookup(key)!.key_id;
}
