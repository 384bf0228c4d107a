/**
 * analyzeFile() with a synthetic decoder (no native addon needed) and placeholder ONNX
 * models run by the real worker pool.
 */
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AudioInfo, FeatureChunk, OpenOptions } from '../../src/audio/types';
import { buildChannelResult, modelsToRun } from '../../src/analysis';
import { closeSharedEngines, FLOATS_PER_STEP, InferenceEngine, sharedEngine, writePlaceholderModels } from '../../src/inference';
import { seededRandom } from '../../src/inference/placeholder';
import { analyzeFile, FileFrontendLike, OpenFileFrontend, pipelineAnalyzer } from '../../src/pipeline';
import { parseAnalysisRequest } from '../../src/analysis/options';
import { wavBytes } from '../audio/helpers';

/** A 16 kHz mono 16-bit WAV of a 440 Hz tone. */
function toneWav(seconds: number): Buffer {
  const samples = Float32Array.from({ length: Math.round(seconds * 16000) }, (_, i) => (8000 / 32768) * Math.sin((2 * Math.PI * 440 * i) / 16000));
  return wavBytes({ rate: 16000, channels: 1, bits: 16 }, samples);
}

const F = FLOATS_PER_STEP;

interface FakeChannel {
  features: Float32Array;
  levels: Float32Array;
}

function fakeChannel(steps: number, seed: number, level: (s: number) => number): FakeChannel {
  const r = seededRandom(seed);
  return {
    features: Float32Array.from({ length: steps * F }, () => r() * 6 - 4),
    levels: Float32Array.from({ length: steps }, (_, s) => level(s)),
  };
}

/** A decoder double: serves `channels` in chunks of `chunkSteps`, like src/audio's FileFrontend. */
function fakeOpen(
  channels: FakeChannel[],
  opts: { chunkSteps?: number; frames?: number; sampleRate?: number } = {},
): { open: OpenFileFrontend; state: { opened: number; closed: number; reads: number; lastOptions?: OpenOptions } } {
  const state: { opened: number; closed: number; reads: number; lastOptions?: OpenOptions } = { opened: 0, closed: 0, reads: 0 };
  const steps = channels[0]!.levels.length;
  const chunk = opts.chunkSteps ?? 40;
  const open: OpenFileFrontend = async (_source, options) => {
    state.opened++;
    state.lastOptions = options;
    const info: AudioInfo = {
      sampleRate: opts.sampleRate ?? 16000,
      channels: channels.length,
      frames: opts.frames ?? steps * 1024,
      durationSec: (opts.frames ?? steps * 1024) / (opts.sampleRate ?? 16000),
      format: 'WAV',
      subtype: 'PCM_16',
    };
    const selected = options.channel !== undefined ? [options.channel] : channels.map((_, i) => i);
    let pos = 0;
    const analyzer: FileFrontendLike = {
      info,
      async read(): Promise<FeatureChunk[] | null> {
        await new Promise((r) => setImmediate(r));
        state.reads++;
        if (pos >= steps) return null;
        const n = Math.min(chunk, steps - pos);
        const out = selected.map((ch) => ({
          channel: ch,
          startStep: pos,
          steps: n,
          levels: channels[ch]!.levels.slice(pos, pos + n),
          features: channels[ch]!.features.slice(pos * F, (pos + n) * F),
        }));
        pos += n;
        return out;
      },
      close() {
        state.closed++;
      },
    };
    return analyzer;
  };
  return { open, state };
}

let tmp: string;
let engine: InferenceEngine;
before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-pipeline-'));
  writePlaceholderModels(tmp);
  engine = await InferenceEngine.create({ modelsDir: tmp, size: 2 });
});
after(async () => {
  await engine.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const STEPS = 150;
const loud = (): number => -20;
const stereo = [fakeChannel(STEPS, 1, loud), fakeChannel(STEPS, 2, (s) => (s % 50 < 10 ? -90 : -25))];
const source = { path: '/nonexistent/fake.wav' };

/** Reference: whole-signal model runs + post-processing, no windowing, no pipeline. */
async function reference(ch: FakeChannel, models: string[], extra: { outputPeriodMs: number; durationMs?: number }) {
  const probs: Record<string, Float32Array> = {};
  for (const m of modelsToRun(models)) probs[m] = await engine.infer(m, ch.features.slice(), STEPS);
  return buildChannelResult(
    { steps: STEPS, levels: ch.levels, probs, ...(extra.durationMs !== undefined ? { durationMs: extra.durationMs } : {}) },
    {
      models,
      rawKeys: engine.registry.rawKeys(),
      outputPeriodMs: extra.outputPeriodMs,
      volumeThreshold: -50,
      includeSummary: true,
      includeTransitions: true,
      includeRaw: true,
    },
  );
}

describe('analyzeFile (synthetic decoder, placeholder models)', () => {
  it('multi-channel: one entry per channel, equal to a whole-signal run when one window covers the file', async () => {
    const { open, state } = fakeOpen(stereo, { frames: STEPS * 1024 - 500 });
    const models = ['speech', 'arousal', 'gender'];
    const res = await analyzeFile(
      source,
      { models, outputPeriodMs: 256, includeSummary: true, includeTransitions: true, includeRaw: true },
      { engine, open, windowSteps: 1024 },
    );
    assert.deepEqual(Object.keys(res.channels), ['0', '1']);
    assert.equal(state.closed, 1);
    assert.deepEqual(res.steps, { '0': STEPS, '1': STEPS });
    const durationMs = ((STEPS * 1024 - 500) / 16000) * 1000;
    assert.equal(res.durationMs, durationMs);
    for (const ch of [0, 1]) {
      assert.deepEqual(res.channels[String(ch)], await reference(stereo[ch]!, models, { outputPeriodMs: 256, durationMs }));
    }
    const ts = res.channels['1']!.time_series;
    assert.equal(ts.length, Math.ceil(STEPS / 4));
    assert.equal(ts[0]!.results['speech']!.result, 'silence');
    assert.deepEqual(Object.keys(res.channels['0']!.summary!), models);
  });

  it('small windows give the same results (to float rounding) as one window', async () => {
    const { open } = fakeOpen(stereo, { chunkSteps: 7 });
    const res = await analyzeFile(source, { models: ['gender'], outputPeriodMs: 64, includeRaw: true }, { engine, open, windowSteps: 16 });
    const ref = await reference(stereo[0]!, ['gender'], { outputPeriodMs: 64 });
    const got = res.channels['0']!.time_series;
    assert.equal(got.length, STEPS);
    got.forEach((step, i) => {
      const want = ref.time_series[i]!;
      assert.equal(step.results['gender']!.result, want.results['gender']!.result);
      assert.ok(Math.abs(step.results['gender']!.confidence - want.results['gender']!.confidence) <= 1e-4 + 1e-9);
      for (const k of ['female', 'male']) assert.ok(Math.abs(step.raw!['gender']![k]! - want.raw!['gender']![k]!) <= 1e-4 + 1e-9);
    });
    // Only the requested model is reported, although speech ran for the no_speech gate.
    assert.deepEqual(Object.keys(got[0]!.results), ['gender']);
    assert.deepEqual(Object.keys(got[0]!.raw!), ['gender']);
  });

  it('channel selection: only the chosen channel; a missing channel is INVALID_CHANNEL', async () => {
    const { open, state } = fakeOpen(stereo);
    const res = await analyzeFile(source, { models: 'speech', outputPeriodMs: 1024, channel: 1 }, { engine, open });
    assert.deepEqual(Object.keys(res.channels), ['1']);
    assert.equal(state.lastOptions!.channel, 1);
    await assert.rejects(analyzeFile(source, { models: 'speech', outputPeriodMs: 1024, channel: 2 }, { engine, open }), {
      code: 'INVALID_CHANNEL',
    });
    assert.equal(state.closed, state.opened);
  });

  it('validates options before opening the file', async () => {
    const { open, state } = fakeOpen(stereo);
    await assert.rejects(analyzeFile(source, { models: 'speech,age', outputPeriodMs: 64 }, { engine, open }), {
      code: 'UNKNOWN_MODEL',
      message: /valid models: arousal, gender, speech/,
    });
    await assert.rejects(analyzeFile(source, { models: 'speech', outputPeriodMs: 65 }, { engine, open }), { code: 'INVALID_ARGUMENT' });
    await assert.rejects(analyzeFile(source, { models: 'speech', outputPeriodMs: 64, volumeThreshold: 3 }, { engine, open }), {
      code: 'INVALID_ARGUMENT',
    });
    assert.equal(state.opened, 0);
  });

  it('reports progress from 0 to 1, monotonically', async () => {
    const { open } = fakeOpen([fakeChannel(400, 3, loud)], { chunkSteps: 25 });
    const seen: number[] = [];
    await analyzeFile(source, { models: 'speech', outputPeriodMs: 64 }, { engine, open, onProgress: (p) => seen.push(p) });
    assert.equal(seen[0], 0);
    assert.equal(seen[seen.length - 1], 1);
    assert.ok(seen.length > 5);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! >= seen[i - 1]!);
  });

  it('unknown length (frames -1): the duration is whole steps', async () => {
    const { open } = fakeOpen([fakeChannel(20, 4, loud)], { frames: -1 });
    const res = await analyzeFile(source, { models: 'speech', outputPeriodMs: 640, includeTransitions: true }, { engine, open });
    assert.equal(res.durationMs, 20 * 64);
    assert.equal(res.channels['0']!.transitions!['speech']!.at(-1)!.timestamp_end, 1280);
  });

  it('can be cancelled; the decoder is closed', async () => {
    const { open, state } = fakeOpen([fakeChannel(2000, 5, loud)], { chunkSteps: 10 });
    const ac = new AbortController();
    const p = analyzeFile(source, { models: 'speech', outputPeriodMs: 64 }, {
      engine,
      open,
      signal: ac.signal,
      onProgress: (f) => {
        if (f > 0.1) ac.abort();
      },
    });
    await assert.rejects(p, { code: 'ABORTED' });
    assert.equal(state.closed, 1);
    assert.ok(state.reads < 100, `stopped early (${state.reads} reads)`);
  });

  it('without an engine, uses the shared engine of options.modelsDir (as the job worker does)', async () => {
    const { open } = fakeOpen([fakeChannel(30, 6, loud)]);
    try {
      const res = await analyzeFile(source, { models: ['speech'], outputPeriodMs: 64 }, { open, modelsDir: tmp });
      assert.equal(res.channels['0']!.time_series.length, 30);
      assert.equal(await sharedEngine({ modelsDir: tmp }), await sharedEngine({ modelsDir: tmp }));
    } finally {
      await closeSharedEngines();
    }
  });

  it('the job analyzer gives freed memory back when its last running analysis ends, a failed one included', async () => {
    const wav = path.join(tmp, 'tone.wav');
    fs.writeFileSync(wav, toneWav(1.5));
    let releases = 0;
    const analyzer = pipelineAnalyzer(tmp, async () => {
      releases++;
    });
    try {
      const request = parseAnalysisRequest({ models: ['speech'], outputPeriodMs: 64 });
      const [a] = await Promise.all([analyzer.analyze({ path: wav }, request, {}), analyzer.analyze({ path: wav }, request, {})]);
      assert.ok(a!['0']!.time_series.length > 20, 'a real analysis ran');
      assert.equal(releases, 1, 'once: when the second of the two running analyses ended');
      await assert.rejects(analyzer.analyze({ path: path.join(tmp, 'missing.wav') }, request, {}));
      assert.equal(releases, 2);
    } finally {
      await analyzer.close?.();
    }
  });

  it('reads 10 s at a time with the speaker map (its encoder is the slow stage), else the front end default', async () => {
    // the shipped models: the placeholders have no encoder
    const shipped = await sharedEngine();
    try {
      const asked = async (models: string[], chunkSeconds?: number): Promise<number | undefined> => {
        const { open, state } = fakeOpen([fakeChannel(30, 7, loud)]);
        const settings = { engine: shipped, open, ...(chunkSeconds !== undefined ? { chunkSeconds } : {}) };
        const res = await analyzeFile(source, { models, outputPeriodMs: 64 }, settings);
        assert.equal(res.channels['0']!.time_series.length, 30);
        return state.lastOptions!.chunkSeconds;
      };
      assert.equal(await asked(['speech', 'speakers']), 10);
      assert.equal(await asked(['speech', 'gender']), undefined);
      assert.equal(await asked(['speech', 'arousal']), undefined);
      assert.equal(await asked(['speech', 'speakers'], 3), 3, "the caller's chunkSeconds wins");
    } finally {
      await closeSharedEngines();
    }
  });

  it('decoder errors pass through with their code', async () => {
    const open: OpenFileFrontend = async () => {
      throw Object.assign(new Error('not audio'), { code: 'UNSUPPORTED_FORMAT' });
    };
    await assert.rejects(analyzeFile(source, { models: 'speech', outputPeriodMs: 64 }, { engine, open }), { code: 'UNSUPPORTED_FORMAT' });
  });
});
