/**
 * gRPC stream lifecycle against the real server: cancellation, disconnects and deadlines free
 * the stream's native state at once (no growth of the native stream count), a client that
 * does not read its results hits the per-stream bound (RESOURCE_EXHAUSTED), a fast sender is
 * paused (input backpressure) and still gets every step, and a server shutdown ends open
 * streams cleanly (their results so far, then UNAVAILABLE).
 */
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { openAnalyzeStream } from '../../src/grpc/client';
import type { StepResultMsg, StreamConfigMsg } from '../../src/grpc/proto';
import { skipOrFail } from '../env';
import { API_KEY, errorCodeOf, nativeStreams, rng, startServer, streamPcm, TestServer, waitFor } from './helpers';

let ts: TestServer;
const QUEUE_BOUND = 32;
const STALL_MS = 1000;

before(async () => {
  // realtimeSlackMs: every client counts as live here (never throttled), so the queue bound applies.
  ts = await startServer({ maxQueuedResults: QUEUE_BOUND, maxWindowSteps: 8, maxBacklogSteps: 16, realtimeSlackMs: 3_600_000 });
});
after(async () => {
  await ts.close();
});

// Finals only: these tests count step messages against steps of audio (flow control, shutdown);
// provisional results have their own tests (test/streaming/provisional.test.ts).
const config = (over: Partial<StreamConfigMsg> = {}): StreamConfigMsg => ({
  models: ['speech', 'gender'],
  output_period: 64,
  sample_rate: 16000,
  encoding: 'PCM_S16LE',
  include_raw_values: true,
  results: 'RESULTS_MODE_FINAL',
  ...over,
});

/** `seconds` of noisy tone, s16le 16 kHz mono. */
function pcm(seconds: number, seed = 1): Buffer {
  const n = Math.round(seconds * 16000);
  const r = rng(seed);
  const b = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) b.writeInt16LE(Math.round(6000 * Math.sin((2 * Math.PI * 220 * i) / 16000) + 2000 * (r() * 2 - 1)), i * 2);
  return b;
}

/** The native stream count; without it (an old addon) the test is skipped, or fails in strict mode. */
function skipWithoutCount(t: TestContext): number | undefined {
  const n = nativeStreams();
  if (n === undefined) skipOrFail(t, 'the native addon predates StreamFrontend.close(); rebuild it (npm run setup)');
  return n;
}

describe('freeing streams', () => {
  it('cancellation frees the native stream at once, with no growth over many streams', async (t) => {
    const base = skipWithoutCount(t);
    if (base === undefined) return;
    for (let i = 0; i < 12; i++) {
      const h = openAnalyzeStream(ts.client, API_KEY, config());
      h.call.on('data', () => undefined);
      await h.send(pcm(1 + (i % 3), i));
      await waitFor(() => nativeStreams() === base + 1, 5000, 'the stream to start');
      h.call.cancel();
      const st = await h.status;
      assert.equal(st.code, grpc.status.CANCELLED);
      await waitFor(() => nativeStreams() === base && ts.srv.stats().activeStreams === 0, 5000, 'the stream to be freed');
    }
    const stats = ts.srv.stats();
    assert.equal(Object.values(stats.streamsEnded).reduce((x, y) => x + y, 0), stats.streamsStarted, JSON.stringify(stats));
  });

  it('a client disconnect and an expired deadline free the stream too', async (t) => {
    const base = skipWithoutCount(t);
    if (base === undefined) return;
    // A client process that opens a stream, sends audio and is then killed (TCP connection gone).
    const clientJs = path.join(__dirname, '..', '..', 'src', 'grpc', 'client.js');
    const script = `
      const { createClient, openAnalyzeStream } = require(${JSON.stringify(clientJs)});
      const h = openAnalyzeStream(createClient(process.argv[1]), process.argv[2], JSON.parse(process.argv[3]));
      h.call.on('data', () => {});
      h.send(Buffer.alloc(64000, 1)).then(() => console.log('sent'));
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['-e', script, ts.address, API_KEY, JSON.stringify(config())], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
    await waitFor(() => nativeStreams() === base + 1, 5000, 'the stream to start');
    child.kill('SIGKILL');
    await waitFor(() => nativeStreams() === base && ts.srv.stats().activeStreams === 0, 5000, 'the disconnected stream to be freed');

    const d = openAnalyzeStream(ts.client, API_KEY, config(), { deadline: Date.now() + 400 });
    d.call.on('data', () => undefined);
    await d.send(pcm(1));
    const st = await d.status;
    assert.equal(st.code, grpc.status.DEADLINE_EXCEEDED);
    await waitFor(() => nativeStreams() === base && ts.srv.stats().activeStreams === 0, 5000, 'the expired stream to be freed');
  });

  it('finished and failed streams leave no native state behind', async (t) => {
    const base = skipWithoutCount(t);
    if (base === undefined) return;
    const ok = await streamPcm(ts.client, config({ include_summary: true }), pcm(1.3));
    assert.equal(ok.status.code, grpc.status.OK, ok.status.details);
    const bad = await streamPcm(ts.client, config({ output_period: 65 }), pcm(0.5));
    assert.equal(bad.status.code, grpc.status.INVALID_ARGUMENT);
    await waitFor(() => nativeStreams() === base && ts.srv.stats().activeStreams === 0, 5000, 'streams to be freed');
  });
});

describe('flow control', () => {
  it('a live client that stops reading its results hits the per-stream queue bound: RESOURCE_EXHAUSTED, stream freed', async (t) => {
    const base = skipWithoutCount(t);
    if (base === undefined) return;
    const ended = ts.srv.stats().streamsEnded['RESOURCE_EXHAUSTED'] ?? 0;
    const h = openAnalyzeStream(ts.client, API_KEY, config());
    // The client reads one result, then stops reading (grpc-js then stops taking data: HTTP/2 flow control).
    let received = 0;
    const onData = (): void => {
      received++;
      h.call.pause();
    };
    h.call.on('data', onData);
    const second = pcm(1);
    for (let i = 0; i < 600 && (ts.srv.stats().streamsEnded['RESOURCE_EXHAUSTED'] ?? 0) === ended; i++) {
      await Promise.race([h.send(second), new Promise((r) => setTimeout(r, 200))]);
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.equal(ts.srv.stats().streamsEnded['RESOURCE_EXHAUSTED'], ended + 1, 'the server ended the stream');
    assert.equal(ts.srv.stats().activeStreams, 0);
    assert.equal(nativeStreams(), base, 'the native stream was freed at once');
    // Reading again: the results sent before the error, then the status.
    h.call.off('data', onData);
    h.call.on('data', () => received++);
    h.call.resume();
    const st = await h.status;
    assert.equal(st.code, grpc.status.RESOURCE_EXHAUSTED, st.details);
    assert.equal(errorCodeOf(st), 'RESOURCE_EXHAUSTED');
    assert.match(st.details, new RegExp(`the client is not reading its results: more than ${QUEUE_BOUND} results waiting`));
    // The results grpc-js had taken before the error are delivered, then the status; how many it had
    // passed to HTTP/2 by then depends on its buffering (17 objects) and the event loop, not on the
    // bound: on a loaded machine it can be just the first one (seen in CI runs), so only that is certain.
    assert.ok(received >= 1, `results before the error were delivered (${received})`);
  });

  describe('clients sending faster than real time (throttled by their own reading)', () => {
    let fast: TestServer;
    before(async () => {
      fast = await startServer({ maxStallMs: STALL_MS, maxWindowSteps: 8, maxBacklogSteps: 16, maxQueuedResults: QUEUE_BOUND });
    });
    after(async () => {
      await fast.close();
    });

    it('a reading client far ahead of the models gets every step: its input and models wait for its reading, no error', async () => {
      const seconds = 150;
      const audio = pcm(seconds, 9);
      const chunks = Array.from({ length: Math.ceil(audio.length / 2 ** 20) }, (_, i) => Math.min(2 ** 20, audio.length - i * 2 ** 20));
      const out = await streamPcm(fast.client, config({ models: ['speech'], include_raw_values: false }), audio, chunks);
      assert.equal(out.status.code, grpc.status.OK, out.status.details);
      assert.equal(out.steps.length, Math.ceil((seconds * 16000) / 1024));
      out.steps.forEach((s, i) => assert.equal(s.timestamp, i * 64));
      assert.ok(fast.srv.stats().inputPauses > 0, 'reading paused while the models or the client caught up');
    });

    it('one that stops reading is throttled, then ends with RESOURCE_EXHAUSTED after maxStallMs without progress', async (t) => {
      const base = skipWithoutCount(t);
      if (base === undefined) return;
      const started = fast.srv.stats().streamsStarted;
      const h = openAnalyzeStream(fast.client, API_KEY, config());
      const stopReading = (): void => {
        h.call.pause();
      };
      h.call.on('data', stopReading);
      const second = pcm(1);
      const ended = (): boolean => fast.srv.stats().streamsStarted === started + 1 && fast.srv.stats().activeStreams === 0;
      // 1 s of audio every 5 ms (the sleep also lets the event loop run: send() may resolve at once).
      for (let i = 0; i < 600 && !ended(); i++) {
        await Promise.race([h.send(second), new Promise((r) => setTimeout(r, 200))]);
        await new Promise((r) => setTimeout(r, 5));
      }
      await waitFor(ended, 10_000, 'the stream to end');
      assert.equal(fast.srv.stats().streamsEnded['RESOURCE_EXHAUSTED'], 1);
      assert.equal(nativeStreams(), base);
      h.call.off('data', stopReading);
      h.call.on('data', () => undefined);
      h.call.resume();
      const st = await h.status;
      assert.equal(st.code, grpc.status.RESOURCE_EXHAUSTED, st.details);
      assert.match(st.details, new RegExp(`no progress for ${STALL_MS} ms`));
    });
  });
});

describe('server shutdown', () => {
  it('ends open streams cleanly: results for the audio received, then UNAVAILABLE; new calls are refused', async (t) => {
    const base = skipWithoutCount(t);
    if (base === undefined) return;
    const own = await startServer();
    const h = openAnalyzeStream(own.client, API_KEY, config({ models: ['speech'] }));
    const got: StepResultMsg[] = [];
    h.call.on('data', (m: StepResultMsg) => got.push(m));
    await h.send(pcm(3));
    // 3 s = 46.9 steps: the front end has 46 complete steps; a step's result needs the 12 steps
    // of the speech model's lookahead after it, so 46 - 12 = 34 results are due.
    const due = 46 - own.srv.engine.model('speech').context.rightSteps;
    await waitFor(() => got.length >= due - 4, 10_000, 'the first results');
    await own.srv.close(2000);
    const st = await h.status;
    assert.equal(st.code, grpc.status.UNAVAILABLE, st.details);
    assert.match(st.details, /shutting down/);
    got.forEach((s, i) => assert.equal(s.timestamp, i * 64));
    assert.equal(got.length, due, 'every result the received audio gives, and no flushed partial step');
    assert.equal(nativeStreams(), base);
    const late = await streamPcm(own.client, config(), pcm(0.2));
    assert.equal(late.status.code, grpc.status.UNAVAILABLE);
    own.client.close();
  });
});
