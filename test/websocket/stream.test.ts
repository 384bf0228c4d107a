/**
 * WebSocket streaming (GET /stream), end to end against the whole service (src/app.ts) with
 * real models: a stream of a file's samples gives the file job's labels, summary and
 * transitions (confidences within 1e-4), for uneven frame sizes, both PCM encodings, G.711,
 * and 8 / 16 / 44.1 kHz input; the protocol's messages and close codes.
 */
import { strict as assert } from 'node:assert';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { decodeAll } from '../../src/audio';
import { packageRoot } from '../../src/inference';
import { analyzeFile } from '../../src/pipeline';
import { assertSameAsFile, randomChunks, rng, s16Pcm, sh, stereoSpeechWav, tmpDir, TOL } from '../grpc/helpers';
import { startStreamingApp, wsStream } from './helpers';

const DEMO = path.join(packageRoot(), 'test', 'fixtures', 'demo.flac');
const ALL = ['speech', 'arousal', 'gender', 'emotions'];

let app: Awaited<ReturnType<typeof startStreamingApp>>;

before(async () => {
  app = await startStreamingApp();
});
after(async () => {
  await app.cleanup();
});

/** 8 kHz mono speech, a pause and more speech (espeak-ng), as 16-bit PCM WAV and as G.711 WAVs. */
function telephoneWavs(): { s16: string; mulaw: string; alaw: string } {
  const d = tmpDir();
  const s16 = path.join(d, 'tel-8k.wav');
  sh('espeak-ng', ['-v', 'en-us', '-s', '160', '-w', path.join(d, 't1.wav'), 'Hello, this is a telephone call about your order.']);
  sh('sox', ['-V1', path.join(d, 't1.wav'), '-r', '8000', '-c', '1', '-b', '16', s16, 'pad', '0', '1.2', 'repeat', '1']);
  const mulaw = path.join(d, 'tel-8k-ulaw.wav');
  const alaw = path.join(d, 'tel-8k-alaw.wav');
  sh('sox', ['-V1', s16, '-e', 'u-law', mulaw]);
  sh('sox', ['-V1', s16, '-e', 'a-law', alaw]);
  return { s16, mulaw, alaw };
}

/** The raw 8-bit G.711 payload of a G.711 WAV (sox writes the same bytes as raw). */
function g711Bytes(wav: string, encoding: 'u-law' | 'a-law'): Buffer {
  return sh('sox', ['-V1', wav, '-t', 'raw', '-e', encoding, '-']);
}

describe('same answers as file jobs', () => {
  it('demo.flac (16 kHz) as f32le in frames of 1 byte .. 3 s: same labels, summary and transitions, confidences within 1e-4', async () => {
    const { info, samples } = await decodeAll({ path: DEMO });
    const pcm = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
    const chunks = randomChunks(pcm.length, 1, 3 * info.sampleRate * 4, rng(17));
    assert.ok(chunks.some((c) => c < 4) && chunks.some((c) => c > info.sampleRate * 4), 'frames from below one sample to above 1 s');
    const query = { models: ALL.join(','), output_period: '64', sample_rate: String(info.sampleRate), encoding: 'f32le', include_summary: 'true', include_transitions: 'true', include_raw_values: 'true' };
    const file = await analyzeFile({ path: DEMO }, { models: ALL, outputPeriodMs: 64, includeSummary: true, includeTransitions: true, includeRaw: true }, { engine: app.hub!.engine });
    const out = await wsStream(app.wsUrl, query, pcm, { chunks });
    assert.equal(out.closeCode, 1000, JSON.stringify(out.error));
    assert.equal(out.messages[0]!.type, 'started');
    const ch = file.channels['0']!;
    assertSameAsFile(out.steps, ch.time_series, ALL);
    const summary = out.messages.find((m) => m.type === 'summary')!;
    assert.deepEqual(summary.summary, ch.summary);
    assert.equal(summary.steps, ch.time_series.length);
    const transitions = out.messages.find((m) => m.type === 'transitions')!.transitions as typeof ch.transitions;
    for (const m of ALL) {
      const got = transitions![m]!;
      const want = ch.transitions![m]!;
      assert.deepEqual(got.map((s) => [s.timestamp_start, s.timestamp_end, s.result]), want.map((s) => [s.timestamp_start, s.timestamp_end, s.result]), `transitions of ${m}`);
      got.forEach((s, i) => assert.ok(Math.abs(s.confidence - want[i]!.confidence) <= TOL, `segment ${i} of ${m}`));
    }
    // Order: started, steps, summary, transitions, then the normal close.
    assert.deepEqual(out.messages.slice(-2).map((m) => m.type), ['summary', 'transitions']);
  });

  it('44.1 kHz stereo s16le, channel 1, output_period 320, uneven frames: resampled stream equals the file job', async () => {
    const wav = stereoSpeechWav();
    const pcm = s16Pcm(wav);
    const chunks = randomChunks(pcm.length, 3, 2 * 44100 * 4, rng(29));
    const models = ['gender', 'speech'];
    const query = { models: models.join(','), output_period: '320', sample_rate: '44100', encoding: 's16le', channels: '2', channel: '1', include_summary: 'true', volume_threshold: '-45' };
    const file = await analyzeFile({ path: wav }, { models, outputPeriodMs: 320, channel: 1, includeSummary: true, volumeThreshold: -45 }, { engine: app.hub!.engine });
    const out = await wsStream(app.wsUrl, query, pcm, { chunks });
    assert.equal(out.closeCode, 1000, JSON.stringify(out.error));
    const ch = file.channels['1']!;
    assertSameAsFile(out.steps, ch.time_series, models);
    assert.deepEqual(out.messages.find((m) => m.type === 'summary')!.summary, ch.summary);
  });

  it('8 kHz telephone audio as s16le, mu-law and A-law: each equals the file job of the same samples', async () => {
    const wavs = telephoneWavs();
    const models = ['speech', 'gender'];
    const cases: Array<[string, string, Buffer]> = [
      ['s16le', wavs.s16, s16Pcm(wavs.s16)],
      ['mulaw', wavs.mulaw, g711Bytes(wavs.mulaw, 'u-law')],
      ['alaw', wavs.alaw, g711Bytes(wavs.alaw, 'a-law')],
    ];
    for (const [encoding, wav, bytes] of cases) {
      const file = await analyzeFile({ path: wav }, { models, outputPeriodMs: 256, includeSummary: true }, { engine: app.hub!.engine });
      const chunks = randomChunks(bytes.length, 1, 8000, rng(encoding.length));
      const out = await wsStream(app.wsUrl, { models: models.join(','), output_period: '256', sample_rate: '8000', encoding, include_summary: 'true' }, bytes, { chunks });
      assert.equal(out.closeCode, 1000, `${encoding}: ${JSON.stringify(out.error)}`);
      const ch = file.channels['0']!;
      assertSameAsFile(out.steps, ch.time_series, models);
      assert.deepEqual(out.messages.find((m) => m.type === 'summary')!.summary, ch.summary, encoding);
      const labels = new Set(ch.time_series.map((s) => s.results['speech']!.result));
      assert.ok(labels.has('speech') && labels.has('silence'), `${encoding}: speech and silence (${[...labels].join(', ')})`);
    }
  });
});
