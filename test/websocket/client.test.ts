/**
 * The typed client (src/client/stream.ts, exported from the package) and `auris stream
 * --transport ws|grpc` against the whole service: both transports give the same results as the
 * file job, from a Node stream of bytes, with async iteration; errors carry the stable code.
 */
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openStream, pipeAudio, streamFile, StreamClientError, type StreamMessage, type StreamTarget } from '../../src';
import { packageRoot } from '../../src/inference';
import { analyzeFile } from '../../src/pipeline';
import { assertSameAsFile, runAsync, s16Pcm, stereoSpeechWav, tmpDir } from '../grpc/helpers';
import { KEY_A, startStreamingApp } from './helpers';

const CLI = path.join(packageRoot(), 'dist', 'src', 'cli', 'main.js');
const models = ['speech', 'gender'];
let app: Awaited<ReturnType<typeof startStreamingApp>>;

before(async () => {
  app = await startStreamingApp();
});
after(async () => {
  await app.cleanup();
});

async function collect(stream: AsyncIterable<StreamMessage>): Promise<StreamMessage[]> {
  const out: StreamMessage[] = [];
  for await (const m of stream) out.push(m);
  return out;
}

describe('typed client', () => {
  it('a file streamed from a Node stream over ws and over grpc: both equal the file job (steps, summary, transitions)', async () => {
    const wav = stereoSpeechWav();
    const raw = path.join(tmpDir(), 'stereo.s16');
    fs.writeFileSync(raw, s16Pcm(wav));
    const file = await analyzeFile({ path: wav }, { models, outputPeriodMs: 512, channel: 1, includeSummary: true, includeTransitions: true }, { engine: app.hub!.engine });
    const ch = file.channels['1']!;
    const targets: StreamTarget[] = [
      { transport: 'ws', url: app.url, apiKey: KEY_A },
      { transport: 'grpc', address: `127.0.0.1:${app.grpcPort}`, apiKey: KEY_A },
    ];
    for (const target of targets) {
      const stream = openStream(target, { models, outputPeriodMs: 512, sampleRate: 44100, channels: 2, channel: 1, includeSummary: true, includeTransitions: true, streamId: `cli-${target.transport}` });
      const sending = pipeAudio(stream, fs.createReadStream(raw, { highWaterMark: 7919 }));
      const got = await collect(stream);
      await sending;
      assert.equal(await stream.streamId, `cli-${target.transport}`);
      const steps = got.flatMap((m) => (m.type === 'step' && m.final ? [m.step] : []));
      assertSameAsFile(steps, ch.time_series, models);
      const summary = got.find((m) => m.type === 'summary');
      assert.ok(summary && summary.type === 'summary');
      assert.deepEqual(summary.summary, ch.summary, target.transport);
      assert.deepEqual(Object.keys(summary.summary), models, 'keys in request order');
      const transitions = got.find((m) => m.type === 'transitions');
      assert.ok(transitions && transitions.type === 'transitions');
      for (const m of models) {
        assert.deepEqual(transitions.transitions[m]!.map((s) => [s.timestamp_start, s.timestamp_end, s.result]), ch.transitions![m]!.map((s) => [s.timestamp_start, s.timestamp_end, s.result]), `${target.transport} ${m}`);
      }
      assert.deepEqual(got.slice(-2).map((m) => m.type), ['summary', 'transitions']);
    }
  });

  it('streamFile: a decoded file (its own rate and channels, f32le) over each transport equals the file job', async () => {
    const demo = path.join(packageRoot(), 'test', 'fixtures', 'demo.flac');
    const file = await analyzeFile({ path: demo }, { models, outputPeriodMs: 1024 }, { engine: app.hub!.engine });
    for (const target of [{ transport: 'ws', url: app.url, apiKey: KEY_A }, { transport: 'grpc', address: `127.0.0.1:${app.grpcPort}`, apiKey: KEY_A }] as StreamTarget[]) {
      const stream = await streamFile(target, demo, { models, outputPeriodMs: 1024, chunkMs: 37 });
      const steps = (await collect(stream)).flatMap((m) => (m.type === 'step' && m.final ? [m.step] : []));
      assertSameAsFile(steps, file.channels['0']!.time_series, models);
    }
  });

  it('errors throw a StreamClientError with the stable code on both transports', async () => {
    for (const target of [{ transport: 'ws', url: app.url, apiKey: 'wrong' }, { transport: 'grpc', address: `127.0.0.1:${app.grpcPort}`, apiKey: 'wrong' }] as StreamTarget[]) {
      const stream = openStream(target, { models, outputPeriodMs: 512, sampleRate: 16000 });
      await assert.rejects(collect(stream), (e: unknown) => e instanceof StreamClientError && e.code === 'INVALID_API_KEY', target.transport);
      await assert.rejects(stream.streamId, StreamClientError);
    }
    const bad = openStream({ transport: 'ws', url: app.url, apiKey: KEY_A }, { models: ['nope'], outputPeriodMs: 512, sampleRate: 16000 });
    await assert.rejects(collect(bad), (e: unknown) => e instanceof StreamClientError && e.code === 'UNKNOWN_MODEL' && e.status === 4400);
  });
});

describe('auris stream --transport', () => {
  it('ws and grpc print the same lines (steps, summary, transitions); a bad key exits 1 with its code', async () => {
    const wav = stereoSpeechWav();
    const outputs: string[] = [];
    for (const transport of ['ws', 'grpc']) {
      const r = await runAsync(process.execPath, [CLI, 'stream', wav, '--transport', transport, '--url', app.url, '--grpc', `127.0.0.1:${app.grpcPort}`, '--api-key', KEY_A, '--models', models.join(','), '--channel', '1', '--output-period', '256', '--summary', '--transitions', '--chunk-ms', '53']);
      assert.equal(r.code, 0, r.stderr);
      outputs.push(r.stdout);
    }
    // the finals (provisional lines, "final": false, depend on timing)
    const [ws, grpc] = outputs.map((o) => o.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.final !== false));
    assert.equal(ws!.length, grpc!.length);
    assert.ok(ws!.at(-2)!.summary && ws!.at(-1)!.transitions);
    const labels = (lines: Array<Record<string, unknown>>): string[] => lines.filter((l) => l.results).map((l) => JSON.stringify(Object.values(l.results as object).map((r: { result: string }) => r.result)));
    assert.deepEqual(labels(ws!), labels(grpc!));
    assert.deepEqual(ws!.at(-2), grpc!.at(-2), 'same summary');
    const bad = await runAsync(process.execPath, [CLI, 'stream', wav, '--transport', 'ws', '--url', app.url, '--api-key', 'wrong', '--models', 'speech']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /\[INVALID_API_KEY\]/);
  });
});
