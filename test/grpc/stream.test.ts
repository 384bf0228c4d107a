/**
 * gRPC streaming, end to end against the real server on a free loopback port (real models,
 * real native front end): auth, config validation, step timestamps, equality with file jobs
 * for audio sent in random chunks, end-of-stream flush and summary, ListModels, health and
 * reflection.
 */
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { decodeAll } from '../../src/audio';
import { packageRoot } from '../../src/inference';
import { analyzeFile } from '../../src/pipeline';
import { listModels, openAnalyzeStream, stepJson } from '../../src/grpc/client';
import type { StreamConfigMsg } from '../../src/grpc/proto';
import { API_KEY, assertSameAsFile, errorCodeOf, nativeStreams, randomChunks, reflectionQuery, rng, s16Pcm, startServer, stereoSpeechWav, streamPcm, TestServer } from './helpers';

const DEMO = path.join(packageRoot(), 'test', 'fixtures', 'demo.flac');
const ALL = ['speech', 'arousal', 'gender', 'emotions'];
let ts: TestServer;

before(async () => {
  ts = await startServer();
});
after(async () => {
  await ts.close();
});

function baseConfig(over: Partial<StreamConfigMsg> = {}): StreamConfigMsg {
  return { models: ['speech'], output_period: 64, sample_rate: 16000, encoding: 'PCM_S16LE', ...over };
}

describe('auth', () => {
  for (const [what, key] of [
    ['missing', null],
    ['wrong', 'not-a-valid-key'],
  ] as const) {
    it(`a ${what} x-api-key ends the call with UNAUTHENTICATED before any audio is processed`, async () => {
      const before = nativeStreams();
      const started = ts.srv.stats().streamsStarted;
      const pcm = Buffer.alloc(16000 * 2);
      const out = await streamPcm(ts.client, baseConfig(), pcm, [pcm.length], key);
      assert.equal(out.status.code, grpc.status.UNAUTHENTICATED, out.status.details);
      assert.equal(errorCodeOf(out.status), what === 'missing' ? 'MISSING_API_KEY' : 'INVALID_API_KEY');
      assert.equal(out.steps.length, 0);
      assert.equal(ts.srv.stats().streamsStarted, started, 'no stream was started');
      if (before !== undefined) assert.equal(nativeStreams(), before, 'no native stream was created');
    });
  }

  it('ListModels needs the key too', async () => {
    await assert.rejects(listModels(ts.client, 'nope-nope-nope'), (e: grpc.ServiceError) => e.code === grpc.status.UNAUTHENTICATED);
  });
});

describe('config validation: INVALID_ARGUMENT with a precise message', () => {
  const cases: [string, Partial<StreamConfigMsg>, RegExp, string][] = [
    ['no models', { models: [] }, /models: at least one model name is required/, 'INVALID_ARGUMENT'],
    ['unknown model', { models: ['speech', 'nope'] }, /unknown model: nope; valid models: arousal, emotions, gender, speakers, speech/, 'UNKNOWN_MODEL'],
    ['missing output_period', { output_period: 0 }, /output_period is required/, 'INVALID_ARGUMENT'],
    ['output_period not a multiple of 64', { output_period: 100 }, /output_period must be a positive multiple of 64 ms, got 100/, 'INVALID_ARGUMENT'],
    ['volume_threshold out of range', { volume_threshold: 3 }, /volume_threshold must be a level in dBFS between -120 and 0, got 3/, 'INVALID_ARGUMENT'],
    ['missing sample_rate', { sample_rate: 0 }, /sample_rate is required/, 'INVALID_ARGUMENT'],
    ['sample_rate out of range', { sample_rate: 4000 }, /sample_rate must be an integer in 8000\.\.384000 Hz, got 4000/, 'INVALID_ARGUMENT'],
    ['missing encoding', { encoding: 'AUDIO_ENCODING_UNSPECIFIED' }, /encoding is required: PCM_S16LE, PCM_F32LE/, 'INVALID_ARGUMENT'],
    ['unknown encoding value', { encoding: 7 }, /encoding 7 is not supported/, 'INVALID_ARGUMENT'],
    ['too many channels', { channels: 33 }, /channels must be an integer in 1\.\.32, got 33/, 'INVALID_ARGUMENT'],
    ['stereo without channel', { channels: 2 }, /channel is required when config\.channels is 2/, 'INVALID_ARGUMENT'],
    ['channel out of range', { channels: 2, channel: 2 }, /channel 2 does not exist: the stream has 2 channels \(valid: 0\.\.1\)/, 'INVALID_CHANNEL'],
    ['stream_id too long', { stream_id: 'x'.repeat(129) }, /stream_id must be at most 128 printable ASCII characters/, 'INVALID_ARGUMENT'],
  ];
  for (const [what, over, message, code] of cases) {
    it(what, async () => {
      const out = await streamPcm(ts.client, baseConfig(over), Buffer.alloc(3200));
      assert.equal(out.status.code, grpc.status.INVALID_ARGUMENT, out.status.details);
      assert.match(out.status.details, message);
      assert.equal(errorCodeOf(out.status), code);
      assert.equal(out.steps.length, 0);
    });
  }

  it('audio before the config', async () => {
    const md = new grpc.Metadata();
    md.set('x-api-key', API_KEY);
    const c2 = ts.client.Analyze(md);
    const status = new Promise<grpc.StatusObject>((r) => c2.on('status', r));
    c2.on('error', () => undefined);
    c2.on('data', () => undefined);
    c2.write({ audio: Buffer.alloc(100) });
    c2.end();
    const st = await status;
    assert.equal(st.code, grpc.status.INVALID_ARGUMENT);
    assert.match(st.details, /the first message must carry config/);
  });

  it('a second config', async () => {
    const h = openAnalyzeStream(ts.client, API_KEY, baseConfig());
    h.call.on('data', () => undefined);
    await h.send(Buffer.alloc(2000));
    h.call.write({ config: baseConfig() });
    h.end();
    const st = await h.status;
    assert.equal(st.code, grpc.status.INVALID_ARGUMENT);
    assert.match(st.details, /config may only be sent once/);
  });

  it('a stream without audio', async () => {
    const out = await streamPcm(ts.client, baseConfig(), Buffer.alloc(0), []);
    assert.equal(out.status.code, grpc.status.INVALID_ARGUMENT);
    assert.match(out.status.details, /ended without any audio sample/);
    assert.equal(errorCodeOf(out.status), 'EMPTY_AUDIO');
  });
});

describe('steps', () => {
  it('timestamps are 0, p, 2p, ... (integer ms), the last partial step included; stream id echoed', async () => {
    // 1.5 s of a 440 Hz tone at 16 kHz: 23.4 steps of 64 ms -> ceil(24 / 3) = 8 output steps of 192 ms.
    const n = 24000;
    const pcm = Buffer.alloc(n * 2);
    for (let i = 0; i < n; i++) pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 16000)), i * 2);
    const out = await streamPcm(ts.client, baseConfig({ output_period: 192, stream_id: 'my-stream-7' }), pcm, randomChunks(pcm.length, 1, 9000, rng(3)));
    assert.equal(out.status.code, grpc.status.OK, out.status.details);
    assert.deepEqual(
      out.steps.map((s) => s.timestamp),
      [0, 192, 384, 576, 768, 960, 1152, 1344],
    );
    for (const s of out.steps) assert.ok(Number.isInteger(s.timestamp));
    assert.equal(out.summary, undefined, 'no summary unless asked');
    assert.deepEqual(out.metadata.get('auris-stream-id'), ['my-stream-7']);
  });

  it('results hold one key per requested model, raw only when asked, labels from the model label sets', async () => {
    const n = 16000;
    const pcm = Buffer.alloc(n * 2);
    for (let i = 0; i < n; i++) pcm.writeInt16LE(Math.round(6000 * Math.sin((2 * Math.PI * 300 * i) / 16000)), i * 2);
    const res = await listModels(ts.client, API_KEY);
    const labels = Object.fromEntries(res.models.map((m) => [m.name, m.labels]));
    const a = await streamPcm(ts.client, baseConfig({ models: ['gender', 'speech'], output_period: 128 }), pcm);
    assert.equal(a.status.code, grpc.status.OK, a.status.details);
    for (const s of a.steps) {
      assert.deepEqual(Object.keys(s.results!).sort(), ['gender', 'speech']);
      assert.ok(!s.raw || Object.keys(s.raw).length === 0);
      for (const [m, r] of Object.entries(s.results!)) assert.ok(labels[m]!.includes(r.result), `${m}: ${r.result}`);
    }
    const b = await streamPcm(ts.client, baseConfig({ models: ['arousal'], output_period: 128, include_raw_values: true }), pcm);
    assert.equal(b.status.code, grpc.status.OK, b.status.details);
    for (const s of b.steps) {
      assert.deepEqual(Object.keys(s.results!), ['arousal'], 'speech runs for gating but is not reported');
      assert.deepEqual(Object.keys(s.raw!.arousal!.values).sort(), ['high', 'low', 'neutral']);
    }
  });
});

describe('same answers as file jobs', () => {
  it('demo.flac (16 kHz mono) sent as float32 in random chunks of 1 sample .. 3 s: same labels, summary, confidences within 1e-4', async () => {
    const { info, samples } = await decodeAll({ path: DEMO });
    const pcm = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
    // Log-uniform sizes from 1 byte (not even a whole sample) to 3 s.
    const chunks = randomChunks(pcm.length, 1, 3 * info.sampleRate * 4, rng(11));
    assert.ok(chunks.some((c) => c < 4) && chunks.some((c) => c > info.sampleRate * 4), 'sizes from below one sample to above 1 s');
    const cfg: StreamConfigMsg = {
      models: ALL,
      output_period: 64,
      sample_rate: info.sampleRate,
      encoding: 'PCM_F32LE',
      channels: info.channels,
      include_summary: true,
      include_raw_values: true,
    };
    const file = await analyzeFile({ path: DEMO }, { models: ALL, outputPeriodMs: 64, includeSummary: true, includeRaw: true }, { engine: ts.srv.engine });
    const out = await streamPcm(ts.client, cfg, pcm, chunks);
    assert.equal(out.status.code, grpc.status.OK, out.status.details);
    const ch = file.channels['0']!;
    assertSameAsFile(out.steps.map((x) => stepJson(x, ALL)), ch.time_series, ALL);
    // End-of-stream flush: the last partial step (24.196 s = 378.06 steps) is there.
    assert.equal(out.steps.at(-1)!.timestamp, 378 * 64);
    assert.ok(out.summary, 'summary message at the end');
    const summary = Object.fromEntries(ALL.map((m) => [m, out.summary!.summary!.models[m]!.fractions]));
    assert.deepEqual(summary, ch.summary);
    assert.equal(out.summary!.summary!.steps, ch.time_series.length);
    assert.ok(Math.abs(out.summary!.summary!.duration_ms - file.durationMs) < 1e-6);
    assert.equal(out.summary!.timestamp, Math.round(file.durationMs));
  });

  it('44.1 kHz stereo s16le, channel 1, output_period 320, bytes in random chunks: resampled stream equals the file job', async () => {
    const wav = stereoSpeechWav();
    const pcm = s16Pcm(wav);
    const chunks = randomChunks(pcm.length, 1, 3 * 44100 * 4, rng(5));
    const models = ['gender', 'speech'];
    const cfg: StreamConfigMsg = {
      models,
      output_period: 320,
      sample_rate: 44100,
      encoding: 'PCM_S16LE',
      channels: 2,
      channel: 1,
      include_summary: true,
      volume_threshold: -45,
    };
    const file = await analyzeFile({ path: wav }, { models, outputPeriodMs: 320, channel: 1, includeSummary: true, volumeThreshold: -45 }, { engine: ts.srv.engine });
    const out = await streamPcm(ts.client, cfg, pcm, chunks);
    assert.equal(out.status.code, grpc.status.OK, out.status.details);
    const ch = file.channels['1']!;
    assertSameAsFile(out.steps.map((x) => stepJson(x, models)), ch.time_series, models);
    assert.deepEqual(Object.fromEntries(models.map((m) => [m, out.summary!.summary!.models[m]!.fractions])), ch.summary);
    const labels = new Set(ch.time_series.map((s) => s.results['speech']!.result));
    assert.ok(labels.has('speech') && labels.has('silence'), `the test audio has speech and silence (${[...labels].join(', ')})`);
  });

  it('with the stateful graphs off (statefulModels: false, windowed calls only) the stream equals the file job too', async () => {
    assert.ok(ts.srv.engine.model('gender').streaming, 'the shipped models have streaming graphs (used by the tests above)');
    const windowed = await startServer({ statefulModels: false });
    try {
      const { info, samples } = await decodeAll({ path: DEMO });
      const pcm = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
      const chunks = randomChunks(pcm.length, 1, info.sampleRate * 4, rng(23));
      const cfg: StreamConfigMsg = { models: ALL, output_period: 192, sample_rate: info.sampleRate, encoding: 'PCM_F32LE', include_summary: true };
      const file = await analyzeFile({ path: DEMO }, { models: ALL, outputPeriodMs: 192, includeSummary: true }, { engine: ts.srv.engine });
      const out = await streamPcm(windowed.client, cfg, pcm, chunks);
      assert.equal(out.status.code, grpc.status.OK, out.status.details);
      assertSameAsFile(out.steps.map((x) => stepJson(x, ALL)), file.channels['0']!.time_series, ALL);
    } finally {
      await windowed.close();
    }
  });
});

/** The rows of docs/streaming.md's latency table: `| speech | 12 / 12 | 1600 ms | 776 ms | 776 ms |`. */
function latencyTable(): Record<string, { left: number; right: number; receptiveFieldMs: number; lookaheadMs: number; streamLookaheadMs: number }> {
  const doc = readFileSync(path.join(packageRoot(), 'docs', 'streaming.md'), 'utf8');
  const rows: ReturnType<typeof latencyTable> = {};
  for (const m of doc.matchAll(/^\| (\w+) \| (\d+) \/ (\d+) \| (\d+) ms \| (\d+) ms \| (\d+) ms/gm)) {
    rows[m[1]!] = { left: +m[2]!, right: +m[3]!, receptiveFieldMs: +m[4]!, lookaheadMs: +m[5]!, streamLookaheadMs: +m[6]! };
  }
  return rows;
}

describe('ListModels, health, reflection', () => {
  it('ListModels: names, labels, raw keys, summary keys, version, receptive field and lookahead', async () => {
    const res = await listModels(ts.client, API_KEY);
    assert.equal(res.step_ms, 64);
    assert.equal(res.sample_rate, 16000);
    const by = Object.fromEntries(res.models.map((m) => [m.name, m]));
    assert.deepEqual(Object.keys(by).sort(), ['arousal', 'emotions', 'gender', 'speakers', 'speech']);
    assert.deepEqual([...by.speech!.labels].sort(), ['music', 'other', 'silence', 'speech']);
    assert.deepEqual([...by.gender!.labels].sort(), ['female', 'male', 'no_speech', 'silence', 'unknown']);
    assert.deepEqual([...by.arousal!.raw_keys].sort(), ['high', 'low', 'neutral']);
    assert.deepEqual(by.gender!.summary_keys, ['male_fraction', 'female_fraction', 'other_fraction', 'unknown_fraction', 'silence_fraction']);
    assert.deepEqual([...by.emotions!.labels].sort(), ['happy', 'irritated', 'neutral', 'no_speech', 'silence', 'tired']);
    assert.deepEqual(by.emotions!.raw_keys, ['happy', 'irritated', 'neutral', 'tired']);
    assert.deepEqual(by.emotions!.summary_keys, ['happy_fraction', 'irritated_fraction', 'neutral_fraction', 'tired_fraction', 'no_speech_fraction', 'silence_fraction']);
    // Checked against sources independent of the registry: the manifest files read as plain JSON,
    // the documented arithmetic (receptive field = (left + 1 + right) steps of 64 ms; lookahead =
    // right steps of 64 ms + 8 ms, half the 512-sample window) and the table in docs/streaming.md.
    const documented = latencyTable();
    assert.deepEqual(Object.keys(documented).sort(), ['arousal', 'emotions', 'gender', 'speakers', 'speech']);
    // the speaker map: labels speaker_1..speaker_20 (numbered per channel) + the speaker models' rule labels
    assert.deepEqual(by.speakers!.labels.slice(-3), ['speaker_20', 'no_speech', 'silence']);
    assert.deepEqual(by.speakers!.summary_keys.slice(0, 1), ['speaker_1_fraction']);
    assert.deepEqual(by.speakers!.also_runs, ['speech']);
    for (const m of res.models) {
      const doc = documented[m.name]!;
      if (m.name === 'speakers') {
        // no network: one 25-step encoder window (raw samples, so no half analysis window in the lookahead)
        assert.deepEqual(
          [m.left_context_steps, m.right_context_steps, m.receptive_field_ms, m.lookahead_ms, m.stream_lookahead_ms],
          [doc.left, doc.right, doc.receptiveFieldMs, doc.lookaheadMs, doc.streamLookaheadMs],
          "docs/streaming.md's latency table row for speakers",
        );
        assert.deepEqual([m.receptive_field_ms, m.lookahead_ms], [25 * 64, 24 * 64]);
        continue;
      }
      const manifest = JSON.parse(readFileSync(path.join(packageRoot(), 'models', m.name, 'manifest.json'), 'utf8')) as {
        version: string; receptive_field_ms: number; lookahead_ms: number; context: { left_steps: number; right_steps: number };
      };
      assert.equal(m.version, manifest.version);
      assert.equal(m.left_context_steps, manifest.context.left_steps);
      assert.equal(m.right_context_steps, manifest.context.right_steps);
      assert.equal(m.receptive_field_ms, manifest.receptive_field_ms);
      assert.equal(m.lookahead_ms, manifest.lookahead_ms);
      assert.equal(m.receptive_field_ms, (m.left_context_steps + 1 + m.right_context_steps) * 64);
      assert.equal(m.lookahead_ms, m.right_context_steps * 64 + 8);
      assert.deepEqual(
        [m.left_context_steps, m.right_context_steps, m.receptive_field_ms, m.lookahead_ms, m.stream_lookahead_ms],
        [doc.left, doc.right, doc.receptiveFieldMs, doc.lookaheadMs, doc.streamLookaheadMs],
        `docs/streaming.md's latency table row for ${m.name}`,
      );
    }
    assert.deepEqual(by.arousal!.also_runs, ['speech']);
    assert.deepEqual(by.emotions!.also_runs, ['speech']);
    assert.equal(by.arousal!.stream_lookahead_ms, Math.max(by.arousal!.lookahead_ms, by.speech!.lookahead_ms));
  });

  it('grpc.health.v1 reports SERVING for the server and the service', async () => {
    const def = protoLoader.loadSync(require('grpc-health-check').protoPath as string);
    const Health = (grpc.loadPackageDefinition(def) as any).grpc.health.v1.Health as grpc.ServiceClientConstructor;
    const c = new Health(ts.address, grpc.credentials.createInsecure()) as any;
    for (const service of ['', 'audioanalysis.v1.AudioAnalysis']) {
      const res = await new Promise<{ status: string | number }>((resolve, reject) => c.Check({ service }, (e: Error | null, r: { status: string | number }) => (e ? reject(e) : resolve(r))));
      assert.ok(res.status === 'SERVING' || res.status === 1, JSON.stringify(res));
    }
    c.close();
  });

  it('server reflection lists the service and returns its file descriptor', async () => {
    const replies = await reflectionQuery(ts.address, [{ list_services: '*' }, { file_containing_symbol: 'audioanalysis.v1.AudioAnalysis' }]);
    const services = replies[0].list_services_response.service.map((s: { name: string }) => s.name);
    assert.ok(services.includes('audioanalysis.v1.AudioAnalysis'), services.join(', '));
    assert.ok(replies[1].file_descriptor_response.file_descriptor_proto.length > 0);
  });
});
