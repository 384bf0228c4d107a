/**
 * Resampling to 16 kHz (libsoxr, SOXR_HQ, float32): frequency kept, SNR > 80 dB against the
 * ideal sine away from the edges, aliases rejected, and chunked input gives exactly the
 * one-shot output.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AudioError, resample } from '../../src/audio';
import { firstDifference, rng } from './helpers';

const IN_RATES = [8000, 22050, 44100, 48000, 96000, 192000];

function sine(n: number, rate: number, freq: number, amp = 0.5): Float32Array {
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = amp * Math.sin((2 * Math.PI * freq * i) / rate);
  return x;
}

/** SNR (dB) of y against amp*sin(2 pi f i / 16000), over [from, to). */
function snrAgainstSine(y: Float32Array, freq: number, amp: number, from: number, to: number): number {
  let sig = 0, err = 0;
  for (let i = from; i < to; i++) {
    const ideal = amp * Math.sin((2 * Math.PI * freq * i) / 16000);
    sig += ideal * ideal;
    err += (y[i]! - ideal) ** 2;
  }
  return 10 * Math.log10(sig / err);
}

/** Frequency from the spacing of the first and last upward zero crossing (interpolated). */
function zeroCrossingFrequency(y: Float32Array, from: number, to: number): number {
  const ups: number[] = [];
  for (let i = from; i < to - 1; i++) {
    if (y[i]! <= 0 && y[i + 1]! > 0) ups.push(i + y[i]! / (y[i]! - y[i + 1]!));
  }
  return ((ups.length - 1) * 16000) / (ups[ups.length - 1]! - ups[0]!);
}

function rms(y: Float32Array, from: number, to: number): number {
  let s = 0;
  for (let i = from; i < to; i++) s += y[i]! * y[i]!;
  return Math.sqrt(s / (to - from));
}

describe('resample() to 16 kHz', () => {
  for (const rate of IN_RATES) {
    it(`${rate} Hz in: frequency and SNR > 80 dB (1 kHz and 3 kHz sines)`, () => {
      for (const freq of [1000, 3000]) {
        const n = rate * 2;
        const y = resample(sine(n, rate, freq), rate);
        assert.ok(Math.abs(y.length - (n * 16000) / rate) <= 1, `length ${y.length} for ${(n * 16000) / rate}`);
        const edge = 1600; // 0.1 s at each end: filter start-up / flush transients
        const snr = snrAgainstSine(y, freq, 0.5, edge, y.length - edge);
        assert.ok(snr > 80, `${rate} Hz -> 16 kHz, ${freq} Hz sine: SNR ${snr.toFixed(1)} dB`);
        const f = zeroCrossingFrequency(y, edge, y.length - edge);
        assert.ok(Math.abs(f - freq) < 0.01, `frequency ${f} Hz instead of ${freq}`);
      }
    });
  }

  it('rejects content above 8 kHz (no aliasing): a 10 kHz sine at 44.1 kHz is attenuated > 80 dB', () => {
    const y = resample(sine(44100, 44100, 10000), 44100);
    const level = 20 * Math.log10(rms(y, 1600, y.length - 1600) / (0.5 / Math.SQRT2));
    assert.ok(level < -80, `alias at ${level.toFixed(1)} dB`);
  });

  it('is the identity at 16 kHz', () => {
    const r = rng(5);
    const x = Float32Array.from({ length: 5000 }, () => r() * 2 - 1);
    assert.equal(firstDifference(resample(x, 16000), x), -1);
  });

  for (const rate of IN_RATES) {
    it(`${rate} Hz: chunked input (odd chunk sizes) == one-shot, sample for sample`, () => {
      const r = rng(rate);
      const n = Math.round(rate * 0.7) + 13;
      const x = Float32Array.from({ length: n }, (_, i) => 0.3 * Math.sin(i * 0.05) + 0.2 * (r() * 2 - 1));
      const oneShot = resample(x, rate);
      for (const chunk of [1, 7, 97, 1001, 4097, n + 5]) {
        const chunked = resample(x, rate, chunk);
        const d = firstDifference(chunked, oneShot);
        assert.equal(d, -1, `chunk ${chunk}: differs at ${d} (lengths ${chunked.length} / ${oneShot.length})`);
      }
    });
  }

  it('validates its arguments (INVALID_ARGUMENT)', () => {
    const x = new Float32Array(100);
    const bad: [string, () => unknown][] = [
      ['rate 0', () => resample(x, 0)],
      ['rate NaN', () => resample(x, NaN)],
      ['rate too high', () => resample(x, 1e7)],
      ['rate as string', () => resample(x, '44100' as unknown as number)],
      ['not a Float32Array', () => resample(new Float64Array(10) as unknown as Float32Array, 44100)],
      ['chunk 0', () => resample(x, 44100, 0)],
      ['chunk 1.5', () => resample(x, 44100, 1.5)],
    ];
    for (const [name, f] of bad) {
      assert.throws(f, (e: unknown) => e instanceof AudioError && e.code === 'INVALID_ARGUMENT', name);
    }
    assert.equal(resample(new Float32Array(0), 44100).length, 0);
  });
});
