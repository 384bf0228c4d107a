/**
 * Shared helpers of the audio tests: temp files, reference decoders (ffmpeg/sox run as
 * child processes), a WAV writer for hand-made headers, a seeded RNG.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AudioError, FileFrontend, type AudioSource, type FeatureChunk, type OpenOptions } from '../../src/audio';

let tmp: string | undefined;

/** A per-process temp directory, removed at exit. */
export function tmpDir(): string {
  if (!tmp) {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-audio-test-'));
    const dir = tmp;
    process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  }
  return tmp;
}

export function tmpFile(name: string): string {
  return path.join(tmpDir(), name);
}

export function run(cmd: string, args: string[]): Buffer {
  return execFileSync(cmd, args, { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** sox ... (generation); throws with sox's stderr on failure. */
export function sox(args: string[]): void {
  run('sox', ['-V1', ...args]);
}

/** Reference decode: every channel, interleaved float32 at the native rate (ffmpeg; `decoder` names its decoder, e.g. libopus). */
export function ffmpegDecode(file: string, decoder?: string): Float32Array {
  const out = run('ffmpeg', ['-v', 'error', ...(decoder ? ['-c:a', decoder] : []), '-i', file, '-f', 'f32le', '-acodec', 'pcm_f32le', '-']);
  return new Float32Array(out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength));
}

/** Raw interleaved s16le of a file at its native rate (ffmpeg). */
export function ffmpegS16(file: string): Buffer {
  return run('ffmpeg', ['-v', 'error', '-i', file, '-f', 's16le', '-acodec', 'pcm_s16le', '-']);
}

/** Deterministic PRNG (mulberry32) in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A test signal: two sines and some noise, per channel a different mix, peak < 0.9. */
export function testSignal(frames: number, channels: number, rate: number, seed = 1): Float32Array {
  const r = rng(seed);
  const x = new Float32Array(frames * channels);
  for (let c = 0; c < channels; c++) {
    const f1 = 220 * (c + 1), f2 = Math.min(3000 + 500 * c, rate * 0.4);
    for (let i = 0; i < frames; i++) {
      const t = i / rate;
      x[i * channels + c] = 0.4 * Math.sin(2 * Math.PI * f1 * t) + 0.25 * Math.sin(2 * Math.PI * f2 * t + c) + 0.1 * (r() * 2 - 1);
    }
  }
  return x;
}

export interface WavSpec {
  rate: number;
  channels: number;
  /** 8 (unsigned), 16, 24, 32 (signed int) or 32/64 with float. */
  bits: number;
  float?: boolean;
  /** WAVE_FORMAT_EXTENSIBLE header (fmt chunk of 40 bytes). */
  extensible?: boolean;
}

/** Quantises float samples in [-1, 1] the way a PCM writer does (round, clip). */
export function wavBytes(spec: WavSpec, samples: Float32Array): Buffer {
  const bytesPer = spec.bits / 8;
  const data = Buffer.alloc(samples.length * bytesPer);
  for (let i = 0; i < samples.length; i++) {
    const v = samples[i]!;
    const o = i * bytesPer;
    if (spec.float) {
      if (spec.bits === 32) data.writeFloatLE(v, o);
      else data.writeDoubleLE(v, o);
      continue;
    }
    const max = 2 ** (spec.bits - 1);
    const q = Math.max(-max, Math.min(max - 1, Math.round(v * max)));
    if (spec.bits === 8) data.writeUInt8(q + 128, o);
    else if (spec.bits === 16) data.writeInt16LE(q, o);
    else if (spec.bits === 24) data.writeIntLE(q, o, 3);
    else data.writeInt32LE(q, o);
  }
  return Buffer.concat([wavHeader(spec, data.length), data]);
}

/** RIFF/WAVE header (RIFF, fmt, data chunk header) for `dataBytes` bytes of samples. */
export function wavHeader(spec: WavSpec, dataBytes: number): Buffer {
  const fmtLen = spec.extensible ? 40 : 16;
  const h = Buffer.alloc(12 + 8 + fmtLen + 8);
  const blockAlign = (spec.channels * spec.bits) / 8;
  const tag = spec.float ? 3 : 1;
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE((4 + 8 + fmtLen + 8 + dataBytes) >>> 0, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(fmtLen, 16);
  h.writeUInt16LE(spec.extensible ? 0xfffe : tag, 20);
  h.writeUInt16LE(spec.channels, 22);
  h.writeUInt32LE(spec.rate, 24);
  h.writeUInt32LE(spec.rate * blockAlign, 28);
  h.writeUInt16LE(blockAlign, 32);
  h.writeUInt16LE(spec.bits, 34);
  if (spec.extensible) {
    h.writeUInt16LE(22, 36); // cbSize
    h.writeUInt16LE(spec.bits, 38); // valid bits
    h.writeUInt32LE(spec.channels === 1 ? 0x4 : spec.channels === 2 ? 0x3 : 0, 40); // channel mask
    // sub-format GUID {tag}-0000-0010-8000-00aa00389b71 (KSDATAFORMAT_SUBTYPE_PCM / _IEEE_FLOAT)
    h.writeUInt32LE(tag, 44);
    h.writeUInt16LE(0, 48);
    h.writeUInt16LE(0x10, 50);
    Buffer.from([0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71]).copy(h, 52);
  }
  h.write('data', 20 + fmtLen, 'ascii');
  h.writeUInt32LE(dataBytes >>> 0, 24 + fmtLen);
  return h;
}

/** Concatenates the chunks of one channel (as returned by FileFrontend/StreamFrontend). */
export function concatChannel(chunks: FeatureChunk[], channel: number): { levels: Float32Array; features: Float32Array; steps: number } {
  const mine = chunks.filter((c) => c.channel === channel);
  const steps = mine.reduce((n, c) => n + c.steps, 0);
  const levels = new Float32Array(steps);
  const features = new Float32Array(steps * 256);
  let at = 0;
  for (const c of mine) {
    if (c.startStep !== at) throw new Error(`chunk of channel ${channel} starts at ${c.startStep}, expected ${at}`);
    levels.set(c.levels, at);
    features.set(c.features, at * 256);
    at += c.steps;
  }
  return { levels, features, steps };
}

/** Index of the first differing element, or -1 (bit-exact comparison, NaN-safe). */
export function firstDifference(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return i;
  return -1;
}

export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** 'OK' if the source opens and reads to the end, else its AudioError code (other errors throw). */
export async function decodeOutcome(source: AudioSource, opts: OpenOptions = {}): Promise<string> {
  let fa: FileFrontend | undefined;
  try {
    fa = await FileFrontend.open(source, opts);
    while ((await fa.read()) !== null);
    return 'OK';
  } catch (e) {
    if (e instanceof AudioError) return e.code;
    throw e;
  } finally {
    fa?.close();
  }
}

/** Writes a WAV of `seconds` by repeating one second of a test signal (no big buffer). */
export function writeLongWav(file: string, seconds: number, rate: number, channels: number): void {
  const second = wavBytes({ rate, channels, bits: 16 }, testSignal(rate, channels, rate, 21)).subarray(44);
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, wavHeader({ rate, channels, bits: 16 }, second.length * seconds));
    for (let s = 0; s < seconds; s++) fs.writeSync(fd, second);
  } finally {
    fs.closeSync(fd);
  }
}
