/**
 * The framer (docs/features.md): levels, shapes, an independent straightforward JS
 * implementation of the log-mel definition, and the invariance of the output to how the
 * samples are chunked (computeFeatures == StreamFrontend with random pushes == FileFrontend
 * with any chunkSeconds == computeFeatures(resample(decoded channel))).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { describe, it } from 'node:test';
import {
  AudioError,
  computeFeatures,
  decodeAll,
  FEATURES_PER_STEP,
  FeatureChunk,
  FileFrontend,
  resample,
  StreamFrontend,
} from '../../src/audio';
import { concatChannel, firstDifference, rng, testSignal, tmpFile, wavBytes } from './helpers';

/** docs/features.md, written out the slow obvious way (float64, naive DFT). */
function referenceFeatures(x: Float32Array): { levels: number[]; features: number[][] } {
  const n = x.length;
  const steps = Math.ceil(n / 1024);
  const levels: number[] = [];
  for (let s = 0; s < steps; s++) {
    let sum = 0;
    const end = Math.min(n, 1024 * (s + 1));
    for (let i = 1024 * s; i < end; i++) sum += x[i]! * x[i]!;
    levels.push(10 * Math.log10(sum / (end - 1024 * s) + 1e-12));
  }
  const mel = (f: number) => 2595 * Math.log10(1 + f / 700);
  const hz = (m: number) => 700 * (10 ** (m / 2595) - 1);
  const edges: number[] = [];
  for (let i = 0; i < 66; i++) edges.push(hz(mel(50) + ((mel(8000) - mel(50)) * i) / 65));
  const cos: number[] = [], sin: number[] = [];
  for (let k = 0; k < 512; k++) {
    cos.push(Math.cos((2 * Math.PI * k) / 512));
    sin.push(Math.sin((2 * Math.PI * k) / 512));
  }
  const features: number[][] = [];
  for (let f = 0; f < steps * 4; f++) {
    const frame: number[] = [];
    for (let k = 0; k < 512; k++) {
      const i = 256 * f - 128 + k;
      const v = i >= 0 && i < n ? x[i]! : 0;
      frame.push(v * (0.5 - 0.5 * cos[k]!));
    }
    const P: number[] = [];
    for (let b = 0; b <= 256; b++) {
      let re = 0, im = 0;
      for (let k = 0; k < 512; k++) {
        const idx = (k * b) % 512;
        re += frame[k]! * cos[idx]!;
        im -= frame[k]! * sin[idx]!;
      }
      P.push(re * re + im * im);
    }
    const row: number[] = [];
    for (let m = 0; m < 64; m++) {
      const l = edges[m]!, c = edges[m + 1]!, u = edges[m + 2]!;
      let e = 0;
      for (let b = 0; b <= 256; b++) {
        const fb = b * 31.25;
        const w = fb > l && fb <= c ? (fb - l) / (c - l) : fb > c && fb < u ? (u - fb) / (u - c) : 0;
        e += w * P[b]!;
      }
      row.push(Math.log(e + 1e-8));
    }
    features.push(row);
  }
  return { levels, features };
}

function sine16k(n: number, freq: number, amp: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => amp * Math.sin((2 * Math.PI * freq * i) / 16000));
}

describe('computeFeatures(): levels and shapes', () => {
  it('a full-scale sine is -3.01 dBFS, digital silence -120 dBFS', () => {
    const { levels, steps } = computeFeatures(sine16k(16 * 1024, 1000, 1));
    assert.equal(steps, 16);
    for (const l of levels) assert.ok(Math.abs(l - -3.0103) < 0.001, `level ${l}`);
    const silent = computeFeatures(new Float32Array(5000));
    assert.equal(silent.steps, 5);
    for (const l of silent.levels) assert.equal(l, -120);
    for (const v of silent.features) assert.ok(Math.abs(v - Math.log(1e-8)) < 1e-5);
  });

  it('the last, partial step averages over the samples it really has', () => {
    const x = new Float32Array(1024 + 100);
    x.fill(0.5, 1024);
    const { levels, steps } = computeFeatures(x);
    assert.equal(steps, 2);
    assert.equal(levels[0], -120);
    assert.ok(Math.abs(levels[1]! - 10 * Math.log10(0.25)) < 1e-4, `level ${levels[1]}`);
  });

  it('steps = ceil(n / 1024), features = steps * 4 * 64 floats', () => {
    for (const [n, steps] of [[1, 1], [1023, 1], [1024, 1], [1025, 2], [4096, 4], [4097, 5]] as const) {
      const out = computeFeatures(new Float32Array(n).fill(0.1));
      assert.equal(out.steps, steps, `n=${n}`);
      assert.equal(out.levels.length, steps);
      assert.equal(out.features.length, steps * FEATURES_PER_STEP);
    }
    assert.throws(() => computeFeatures(new Float32Array(0)), (e: unknown) => e instanceof AudioError && e.code === 'EMPTY_AUDIO');
    assert.throws(() => computeFeatures([1, 2, 3] as unknown as Float32Array), (e: unknown) => e instanceof AudioError && e.code === 'INVALID_ARGUMENT');
  });

  it('matches a naive float64 implementation of docs/features.md', () => {
    const r = rng(42);
    const n = 3 * 1024 + 517;
    const x = Float32Array.from({ length: n }, (_, i) => 0.6 * Math.sin(i * 0.07 + 0.0002 * i * i) + 0.05 * (r() * 2 - 1));
    x.fill(0, 1400, 2100); // a silent gap across frame boundaries
    const ref = referenceFeatures(x);
    const got = computeFeatures(x);
    assert.equal(got.steps, ref.levels.length);
    for (let s = 0; s < got.steps; s++) assert.ok(Math.abs(got.levels[s]! - ref.levels[s]!) < 1e-4, `level ${s}`);
    let worst = 0;
    for (let f = 0; f < ref.features.length; f++) {
      for (let m = 0; m < 64; m++) worst = Math.max(worst, Math.abs(got.features[f * 64 + m]! - ref.features[f]![m]!));
    }
    assert.ok(worst < 1e-4, `max |diff| ${worst}`);
  });
});

/** Pushes bytes in random-size pieces (1 byte .. maxPiece), cutting through sample frames. */
function streamAll(stream: StreamFrontend, bytes: Uint8Array, seed: number, maxPiece: number): FeatureChunk[] {
  const r = rng(seed);
  const out: FeatureChunk[] = [];
  for (let at = 0; at < bytes.length; ) {
    const len = Math.min(bytes.length - at, 1 + Math.floor(r() * maxPiece));
    out.push(...stream.push(bytes.subarray(at, at + len)));
    at += len;
  }
  out.push(...stream.end());
  return out;
}

async function analyzeFile(path: string, opts: { chunkSeconds?: number; channel?: number } = {}): Promise<FeatureChunk[]> {
  const fa = await FileFrontend.open({ path }, opts);
  const all: FeatureChunk[] = [];
  try {
    for (;;) {
      const chunks = await fa.read();
      if (chunks === null) break;
      assert.equal(chunks.length, fa.channels.length, 'one chunk per analysed channel');
      for (const c of chunks) assert.ok(c.steps > 0, 'a chunk has steps');
      all.push(...chunks);
    }
  } finally {
    fa.close();
  }
  return all;
}

describe('chunking does not change the features', () => {
  it('StreamFrontend (16 kHz f32le, random pushes) == computeFeatures()', () => {
    const x = testSignal(16000 * 3 + 333, 1, 16000, 9);
    const oneShot = computeFeatures(x);
    for (const [seed, maxPiece] of [[1, 7], [2, 3000], [3, 100000]] as const) {
      const chunks = streamAll(new StreamFrontend({ sampleRate: 16000, channels: 1, encoding: 'f32le' }), new Uint8Array(x.buffer), seed, maxPiece);
      const got = concatChannel(chunks, 0);
      assert.equal(got.steps, oneShot.steps);
      assert.equal(firstDifference(got.levels, oneShot.levels), -1);
      assert.equal(firstDifference(got.features, oneShot.features), -1);
    }
  });

  it('StreamFrontends fed in turn (shared FFT tables, per-thread work buffers) each == computeFeatures() of its own signal', () => {
    const signals = [0, 1, 2, 3].map((i) => testSignal(16000 * 2 + 100 * i, 1, 16000, 20 + i));
    const streams = signals.map(() => new StreamFrontend({ sampleRate: 16000, channels: 1, encoding: 'f32le' }));
    const outs: FeatureChunk[][] = signals.map(() => []);
    const r = rng(5);
    const at = signals.map(() => 0);
    // round robin with random piece sizes: each push completes steps of one stream between another's
    while (at.some((a, i) => a < signals[i]!.byteLength)) {
      signals.forEach((x, i) => {
        const bytes = new Uint8Array(x.buffer);
        const len = Math.min(bytes.length - at[i]!, 1 + Math.floor(r() * 6000));
        if (len > 0) outs[i]!.push(...streams[i]!.push(bytes.subarray(at[i]!, at[i]! + len)));
        at[i]! += len;
      });
    }
    signals.forEach((x, i) => {
      outs[i]!.push(...streams[i]!.end());
      const got = concatChannel(outs[i]!, 0);
      const oneShot = computeFeatures(x);
      assert.equal(got.steps, oneShot.steps, `stream ${i}`);
      assert.equal(firstDifference(got.features, oneShot.features), -1, `stream ${i}`);
      assert.equal(firstDifference(got.levels, oneShot.levels), -1, `stream ${i}`);
    });
  });

  it('FileFrontend: every chunkSeconds gives the same features, == computeFeatures(resample(channel))', async () => {
    const rate = 44100;
    const file = tmpFile('features-stereo.wav');
    fs.writeFileSync(file, wavBytes({ rate, channels: 2, bits: 16 }, testSignal(Math.round(rate * 9.3), 2, rate, 4)));
    const { samples } = await decodeAll({ path: file });
    const expected = [0, 1].map((c) => {
      const mono = Float32Array.from({ length: samples.length / 2 }, (_, i) => samples[2 * i + c]!);
      return computeFeatures(resample(mono, rate));
    });
    for (const chunkSeconds of [0.05, 1, 2.7, 30]) {
      const chunks = await analyzeFile(file, { chunkSeconds });
      for (const c of [0, 1]) {
        const got = concatChannel(chunks, c);
        assert.equal(got.steps, expected[c]!.steps, `chunkSeconds ${chunkSeconds}, channel ${c}`);
        assert.equal(firstDifference(got.levels, expected[c]!.levels), -1, `levels, chunkSeconds ${chunkSeconds}`);
        assert.equal(firstDifference(got.features, expected[c]!.features), -1, `features, chunkSeconds ${chunkSeconds}`);
      }
    }
    const only1 = concatChannel(await analyzeFile(file, { channel: 1 }), 1);
    assert.equal(firstDifference(only1.features, expected[1]!.features), -1, 'channel selection');
  });

  it('StreamFrontend with random chunk sizes == FileFrontend on the same file (s16le, 44.1 kHz stereo)', async () => {
    const rate = 44100;
    const file = tmpFile('stream-vs-file.wav');
    const wav = wavBytes({ rate, channels: 2, bits: 16 }, testSignal(Math.round(rate * 5.1), 2, rate, 11));
    fs.writeFileSync(file, wav);
    const pcm = wav.subarray(44); // the data chunk of our own 44-byte header
    const fromFile = await analyzeFile(file, { chunkSeconds: 1.3 });
    const streamed = streamAll(new StreamFrontend({ sampleRate: rate, channels: 2, encoding: 's16le' }), pcm, 77, 5000);
    for (const c of [0, 1]) {
      const a = concatChannel(fromFile, c), b = concatChannel(streamed, c);
      assert.equal(b.steps, a.steps);
      assert.equal(firstDifference(b.levels, a.levels), -1, `levels of channel ${c}`);
      assert.equal(firstDifference(b.features, a.features), -1, `features of channel ${c}`);
    }
    const one = streamAll(new StreamFrontend({ sampleRate: rate, channels: 2, encoding: 's16le', channel: 1 }), pcm, 78, 999);
    assert.ok(one.every((c) => c.channel === 1));
    assert.equal(firstDifference(concatChannel(one, 1).features, concatChannel(fromFile, 1).features), -1);
  });

  it('StreamFrontend validates its options and use', () => {
    const bad: [string, () => unknown, string][] = [
      ['no options', () => new StreamFrontend(undefined as unknown as never), 'INVALID_ARGUMENT'],
      ['rate 1000', () => new StreamFrontend({ sampleRate: 1000, channels: 1, encoding: 's16le' }), 'INVALID_ARGUMENT'],
      ['rate 44100.5', () => new StreamFrontend({ sampleRate: 44100.5, channels: 1, encoding: 's16le' }), 'INVALID_ARGUMENT'],
      ['0 channels', () => new StreamFrontend({ sampleRate: 16000, channels: 0, encoding: 's16le' }), 'INVALID_ARGUMENT'],
      ['33 channels', () => new StreamFrontend({ sampleRate: 16000, channels: 33, encoding: 's16le' }), 'INVALID_ARGUMENT'],
      ['encoding', () => new StreamFrontend({ sampleRate: 16000, channels: 1, encoding: 's24le' as never }), 'INVALID_ARGUMENT'],
      ['channel 2 of 2', () => new StreamFrontend({ sampleRate: 16000, channels: 2, encoding: 's16le', channel: 2 }), 'INVALID_CHANNEL'],
    ];
    for (const [name, f, code] of bad) assert.throws(f, (e: unknown) => e instanceof AudioError && e.code === code, name);
    const s = new StreamFrontend({ sampleRate: 16000, channels: 1, encoding: 's16le' });
    assert.throws(() => s.push('abc' as unknown as Uint8Array), (e: unknown) => e instanceof AudioError && e.code === 'INVALID_ARGUMENT');
    assert.deepEqual(s.push(Buffer.alloc(100)), []);
    assert.equal(s.end().length, 1);
    assert.throws(() => s.push(Buffer.alloc(2)), (e: unknown) => e instanceof AudioError && e.code === 'INVALID_ARGUMENT');
    const empty = new StreamFrontend({ sampleRate: 16000, channels: 1, encoding: 'f32le' });
    assert.throws(() => empty.end(), (e: unknown) => e instanceof AudioError && e.code === 'EMPTY_AUDIO');
  });
});
