/**
 * gRPC limits and failures not covered elsewhere: more than maxStreams concurrent calls
 * (RESOURCE_EXHAUSTED, TOO_MANY_STREAMS), health NOT_SERVING as soon as a shutdown starts,
 * input pausing on maxPendingInputBytes alone (every step still delivered), and a model that
 * fails during a stream (INTERNAL with INFERENCE_FAILED; the server keeps serving others).
 */
import { strict as assert } from 'node:assert';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { openAnalyzeStream } from '../../src/grpc/client';
import type { StreamConfigMsg } from '../../src/grpc/proto';
import { modelsDirWithBroken } from '../env';
import { API_KEY, errorCodeOf, rng, startServer, streamPcm, tmpDir, waitFor, type TestServer } from './helpers';

const config = (over: Partial<StreamConfigMsg> = {}): StreamConfigMsg => ({ models: ['speech'], output_period: 64, sample_rate: 16000, encoding: 'PCM_S16LE', ...over });

/** `seconds` of noise, s16le 16 kHz mono. */
function noise(seconds: number, seed = 1): Buffer {
  const r = rng(seed);
  const b = Buffer.alloc(Math.round(seconds * 16000) * 2);
  for (let i = 0; i < b.length / 2; i++) b.writeInt16LE(Math.round(8000 * (r() * 2 - 1)), i * 2);
  return b;
}

describe('maxStreams', () => {
  let ts: TestServer;
  before(async () => {
    ts = await startServer({ maxStreams: 2 });
  });
  after(async () => {
    await ts.close();
  });

  it('a call beyond maxStreams ends with RESOURCE_EXHAUSTED / TOO_MANY_STREAMS; one more fits once a stream ends', async () => {
    const open = [openAnalyzeStream(ts.client, API_KEY, config()), openAnalyzeStream(ts.client, API_KEY, config())];
    for (const h of open) {
      h.call.on('data', () => undefined);
      await h.send(noise(0.2));
    }
    await waitFor(() => ts.srv.stats().activeStreams === 2, 10_000, 'two open streams');
    const third = await streamPcm(ts.client, config(), noise(0.5));
    assert.equal(third.status.code, grpc.status.RESOURCE_EXHAUSTED, third.status.details);
    assert.equal(errorCodeOf(third.status), 'TOO_MANY_STREAMS');
    assert.match(third.status.details, /too many concurrent streams \(limit 2\)/);
    assert.equal(third.steps.length, 0);

    open[0]!.call.end();
    assert.equal((await open[0]!.status).code, grpc.status.OK);
    await waitFor(() => ts.srv.stats().activeStreams === 1, 10_000, 'one stream left');
    const fourth = await streamPcm(ts.client, config(), noise(0.5));
    assert.equal(fourth.status.code, grpc.status.OK, fourth.status.details);
    open[1]!.call.end();
    assert.equal((await open[1]!.status).code, grpc.status.OK);
  });
});

describe('health during shutdown', () => {
  it('grpc.health.v1 Watch turns NOT_SERVING as soon as close() starts, for the server and the service', async () => {
    const own = await startServer({ shutdownGraceMs: 500 });
    const def = protoLoader.loadSync(require('grpc-health-check').protoPath as string);
    const Health = (grpc.loadPackageDefinition(def) as any).grpc.health.v1.Health as grpc.ServiceClientConstructor;
    const c = new Health(own.address, grpc.credentials.createInsecure()) as any;
    try {
      const seen: Record<string, string[]> = { '': [], 'audioanalysis.v1.AudioAnalysis': [] };
      const watches = Object.keys(seen).map((service) => {
        const w = c.Watch({ service });
        w.on('data', (r: { status: string | number }) => seen[service]!.push(String(r.status)));
        w.on('error', () => undefined);
        return w;
      });
      const servingSeen = (): boolean => Object.values(seen).every((s) => s.includes('SERVING') || s.includes('1'));
      await waitFor(servingSeen, 10_000, 'SERVING on both watches');
      const closing = own.srv.close(500);
      await waitFor(() => Object.values(seen).every((s) => s.includes('NOT_SERVING') || s.includes('2')), 10_000, 'NOT_SERVING on both watches');
      for (const w of watches) w.cancel();
      await closing;
    } finally {
      c.close();
      own.client.close();
    }
  });
});

describe('maxPendingInputBytes', () => {
  let ts: TestServer;
  before(async () => {
    // Only the input-bytes bound can pause reading here: the step backlog bound is far away.
    ts = await startServer({ maxPendingInputBytes: 8 * 1024, maxBacklogSteps: 1_000_000, maxQueuedResults: 1_000_000, realtimeSlackMs: 3_600_000 });
  });
  after(async () => {
    await ts.close();
  });

  it('input waiting beyond the bound pauses reading; every step is still delivered in order', async () => {
    const seconds = 20;
    const audio = noise(seconds, 5);
    const pausesBefore = ts.srv.stats().inputPauses;
    const out = await streamPcm(ts.client, config(), audio, [audio.length]);
    assert.equal(out.status.code, grpc.status.OK, out.status.details);
    assert.equal(out.steps.length, Math.ceil((seconds * 16000) / 1024));
    out.steps.forEach((s, i) => assert.equal(s.timestamp, i * 64));
    assert.ok(ts.srv.stats().inputPauses > pausesBefore, 'reading paused on the pending input bytes');
  });
});

describe('a model that fails during a stream', () => {
  let ts: TestServer;
  before(async () => {
    const dir = modelsDirWithBroken(path.join(tmpDir(), 'models-broken'));
    ts = await startServer({ modelsDir: dir });
  });
  after(async () => {
    await ts.close();
  });

  it('ends the call with INTERNAL / INFERENCE_FAILED naming the model; other streams go on', async () => {
    const bad = await streamPcm(ts.client, config({ models: ['broken'] }), noise(3));
    assert.equal(bad.status.code, grpc.status.INTERNAL, bad.status.details);
    assert.equal(errorCodeOf(bad.status), 'INFERENCE_FAILED');
    assert.match(bad.status.details, /broken/);
    assert.equal(ts.srv.stats().streamsEnded['INFERENCE_FAILED'] ?? ts.srv.stats().streamsEnded['INTERNAL'], 1, JSON.stringify(ts.srv.stats()));
    const good = await streamPcm(ts.client, config({ models: ['speech'] }), noise(2));
    assert.equal(good.status.code, grpc.status.OK, good.status.details);
    assert.equal(good.steps.length, Math.ceil((2 * 16000) / 1024));
  });
});
