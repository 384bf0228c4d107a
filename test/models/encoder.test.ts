/**
 * Every shipped encoder (models/encoders/<name>, exported with its front end inside the graph) run
 * through the service's inference pool equals its package's own Python path on two golden windows:
 * test/fixtures/<name>_encoder_golden.json, written by `python -m training.encoders.<name> golden`
 * (speaker: Resemblyzer 0.1.4's librosa mel + PyTorch LSTM; campplus: Kaldi's fbank via
 * kaldi-native-fbank + the package's CAM++ weights). A wrong window, gain, filterbank or weight fails here.
 */
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import * as os from 'node:os';
import { execFileSync } from 'node:child_process';
import { closeSharedEngines, InferenceEngine, sharedEngine } from '../../src/inference';
import { loadEncoder, type EncoderInfo } from '../../src/inference/views';
import { analyzeFile } from '../../src/pipeline';
import { StreamSession } from '../../src/pipeline/analyze-stream';
import { decodeAll } from '../../src/audio';

const ROOT = path.join(__dirname, '..', '..', '..');
interface Golden {
  windows: { f0: number; embedding: number[] }[];
}
/** test/fixtures/<encoder>_encoder_golden.json, written by `python -m training.encoders.<speaker|campplus> golden`. */
function golden(encoder: string): Golden {
  return JSON.parse(fs.readFileSync(path.join(ROOT, 'test', 'fixtures', `${encoder}_encoder_golden.json`), 'utf8')) as Golden;
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return ab / Math.sqrt(aa * bb);
}

/** The golden window (training/encoders/speaker.py golden_signal): 10 harmonics of f0, vibrato, tremolo. */
function goldenSignal(f0: number): Float32Array {
  const n = 25600;
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const t = i / 16000;
    const phase = 2 * Math.PI * f0 * (t - (0.04 * Math.cos(2 * Math.PI * 5 * t)) / (2 * Math.PI * 5));
    let v = 0;
    for (let h = 1; h <= 10; h++) v += Math.sin(h * phase) / h;
    x[i] = 0.05 * v * (0.6 + 0.4 * Math.sin(2 * Math.PI * 3 * t));
  }
  return x;
}

after(async () => {
  await closeSharedEngines();
});

/** Every encoder folder under models/encoders. */
function shippedEncoders(): EncoderInfo[] {
  const dir = path.join(ROOT, 'models', 'encoders');
  return fs.readdirSync(dir).sort().map((name) => loadEncoder(path.join(ROOT, 'models'), name, 'encoder.test.ts'));
}

describe('pretrained encoders', () => {
  it('the shipped models use encoders of models/encoders: gender\'s views and the speaker map\'s', async () => {
    const engine = await sharedEngine();
    const names = new Set(shippedEncoders().map((e) => e.name));
    const views = engine.model('gender').views;
    assert.ok(views && views.views.length > 0, 'gender ships encoder views');
    for (const v of views.views) assert.ok(names.has(v.encoder.name), v.encoder.name);
    const map = engine.model('speakers').speakerMap;
    assert.ok(map && names.has(map.encoder.name), `speaker map encoder ${map?.encoder.name}`);
  });

  it('each encoder gives its package\'s own output for the golden windows', async () => {
    const engine = await sharedEngine();
    for (const encoder of shippedEncoders()) {
      const name = encoder.name.replace('encoder:', '');
      for (const w of golden(name).windows) {
        const got = await engine.pool.runEncoder(encoder, goldenSignal(w.f0));
        assert.equal(got.length, encoder.dim);
        let maxDiff = 0;
        let scale = 1;
        for (let i = 0; i < got.length; i++) {
          maxDiff = Math.max(maxDiff, Math.abs(got[i]! - w.embedding[i]!));
          scale = Math.max(scale, Math.abs(w.embedding[i]!));
        }
        assert.ok(maxDiff < 2e-4 * scale, `${name}, f0 ${w.f0}: max difference ${maxDiff}`);
        assert.ok(cosine(got, w.embedding) > 0.9999, `${name}, f0 ${w.f0}: cosine ${cosine(got, w.embedding)}`);
      }
    }
  });

  it('tells the two golden voices apart (a constant encoder fails)', async () => {
    const engine = await sharedEngine();
    for (const encoder of shippedEncoders()) {
      const [a, b] = await Promise.all(golden(encoder.name.replace('encoder:', '')).windows.map((w) => engine.pool.runEncoder(encoder, goldenSignal(w.f0))));
      assert.ok(cosine(a!, b!) < 0.99, `${encoder.name}: cosine of the 110 Hz and 220 Hz windows ${cosine(a!, b!)}`);
    }
  });
});

describe("the speaker map's file speech gate (speakers 1.9.1)", () => {
  const fixtures = path.join(ROOT, 'test', 'fixtures', 'models');
  const request = { models: ['speakers'], outputPeriodMs: 64 };

  it('a file job embeds no window over a noise the speech model hears no speech in (but one, below); a live stream still does', async () => {
    const engine = await sharedEngine();
    const noise = path.join(fixtures, 'noise.flac');
    let before = engine.pool.stats.encoderWindows;
    const file = await analyzeFile({ path: noise }, request, { engine });
    const fileWindows = engine.pool.stats.encoderWindows - before;
    // 9 windows start in the 4 s (every 6 steps), all loud; the speech model calls the noise `other` or `music` but
    // for 3 of the last window's first 13 steps, so that one passes (at most 10 of 13 may be voiced non-speech)
    assert.ok(fileWindows <= 1, `${fileWindows} encoder windows of a file job over the noise`);
    const speakerSteps = file.channels['0']!.time_series.filter((s) => s.results['speakers']!.result.startsWith('speaker_')).length;
    assert.ok(speakerSteps <= 4, `only the steps the speech model calls speech have a speaker: ${speakerSteps}`);
    // the same noise as a live stream: its windows are decided on their levels alone (the gate cost streams DER)
    const { info, samples } = await decodeAll({ path: noise });
    before = engine.pool.stats.encoderWindows;
    const session = new StreamSession(engine, { ...request, channel: 0, sampleRate: info.sampleRate, encoding: 'f32le', channels: info.channels, includeSummary: false, includeTransitions: false, includeRaw: false }, { onStep: () => undefined, onError: () => undefined });
    try {
      session.push(Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength));
      await session.end();
    } finally {
      session.close();
    }
    const streamWindows = engine.pool.stats.encoderWindows - before;
    assert.ok(streamWindows >= 8, `a stream embeds the loud noise windows: ${streamWindows}`);
  });

  it('a voice right after the noise gets its windows and a speaker', async () => {
    const engine = await sharedEngine();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-map-gate-'));
    try {
      const joined = path.join(dir, 'noise-then-voice.wav');
      execFileSync('sox', [path.join(fixtures, 'noise.flac'), path.join(fixtures, 'male-g711.flac'), '-r', '16000', '-c', '1', joined]);
      const before = engine.pool.stats.encoderWindows;
      const result = await analyzeFile({ path: joined }, request, { engine });
      assert.ok(engine.pool.stats.encoderWindows - before >= 3, 'windows over the voice');
      const steps = result.channels['0']!.time_series.map((s) => s.results['speakers']!.result);
      const voiced = steps.filter((l) => l.startsWith('speaker_'));
      assert.ok(voiced.length > 10 && voiced.every((l) => l === 'speaker_1'), `speaker steps: ${voiced.length}, ${[...new Set(voiced)].join(', ')}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('gender with its encoder view', () => {
  it('embeds no window the speech model hears no speech in, and gives a voice right after a noise its own window', async () => {
    const engine = await sharedEngine();
    const fixtures = path.join(ROOT, 'test', 'fixtures', 'models');
    const request = { models: ['speech', 'gender'], outputPeriodMs: 256 };
    const count = async (file: string): Promise<{ windows: number; result: Awaited<ReturnType<typeof analyzeFile>> }> => {
      const before = engine.pool.stats.encoderWindows;
      const result = await analyzeFile({ path: file }, request, { engine });
      return { windows: engine.pool.stats.encoderWindows - before, result };
    };
    // the noise is loud enough for the level gate alone (which embedded its first window before gender 2.1.1)
    assert.equal((await count(path.join(fixtures, 'noise.flac'))).windows, 0, 'no encoder window over a noise');
    // the noise, then at once (no pause) the male phone voice: the voice's first windows are its own
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-gate-'));
    try {
      const joined = path.join(dir, 'noise-then-voice.wav');
      execFileSync('sox', [path.join(fixtures, 'noise.flac'), path.join(fixtures, 'male-g711.flac'), '-r', '16000', '-c', '1', joined]);
      const { windows, result } = await count(joined);
      assert.ok(windows >= 1, `encoder windows over the voice: ${windows}`);
      const speech = result.channels['0']!.time_series.filter((s) => s.results['speech']?.result === 'speech');
      const male = speech.filter((s) => s.results['gender']?.result === 'male').length / speech.length;
      assert.ok(speech.length > 10 && male > 0.7, `male on ${male.toFixed(2)} of ${speech.length} speech steps`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('embeds the voiced windows of a file and moves the speech steps\' probabilities away from the network alone', async () => {
    const engine = await sharedEngine();
    const demo = path.join(ROOT, 'test', 'fixtures', 'demo.flac');
    const request = { models: ['gender'], outputPeriodMs: 64, includeRaw: true };
    const before = engine.pool.stats.encoderWindows;
    const withView = await analyzeFile({ path: demo }, request, { engine });
    const windows = engine.pool.stats.encoderWindows - before;
    assert.ok(windows >= 2, `encoder windows embedded: ${windows}`);
    // the same models without the view: gender 1.3.0's network alone
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-noview-'));
    try {
      fs.cpSync(path.join(ROOT, 'models'), dir, { recursive: true });
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'gender', 'manifest.json'), 'utf8')) as Record<string, unknown>;
      delete manifest['views'];
      fs.writeFileSync(path.join(dir, 'gender', 'manifest.json'), JSON.stringify(manifest));
      const plain = await InferenceEngine.create({ modelsDir: dir, size: 1 });
      try {
        const netOnly = await analyzeFile({ path: demo }, request, { engine: plain });
        assert.equal(plain.pool.stats.encoderWindows, 0);
        const a = withView.channels['0']!.time_series;
        const b = netOnly.channels['0']!.time_series;
        assert.equal(a.length, b.length);
        const moved = a.filter((s, i) => s.results['gender']!.result !== 'no_speech' && s.results['gender']!.result !== 'silence' && Math.abs(s.raw!['gender']!['male']! - b[i]!.raw!['gender']!['male']!) > 1e-3);
        assert.ok(moved.length > 10, `speech steps whose gender probabilities the view moved: ${moved.length}`);
      } finally {
        await plain.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
