/**
 * src/audio: the audio front end (native addon, native/) as the rest of auris sees it.
 * This is the only module other code imports for decoding/features; see ./types for the
 * contract, docs/features.md for the numbers and docs/audio.md for formats and errors.
 *
 *   probe(source)                       -> AudioInfo (header only)
 *   FileFrontend.open(source, options)  -> chunked features of a file, off the main thread
 *   new StreamFrontend(options)         -> features of raw PCM pushed in chunks
 *   decodeAll / resample / computeFeatures: helpers for tests and benchmarks
 *   nativeStateCopy()                   -> memcpy of live streams' model states (the inference workers)
 *
 * The addon is loaded on first use, so importing this module never fails; a missing or
 * broken build is reported with the fix (`npm run setup`).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AudioError, toAudioError } from './errors';
import type { AudioInfo, AudioSource, FeatureChunk, OpenOptions, StreamOptions } from './types';

export * from './types';
export { AudioError, AUDIO_ERROR_CODES, isAudioErrorCode } from './errors';

/** Output sample rate of the front end, Hz. */
export const SAMPLE_RATE = 16000;
/** Samples per step (64 ms). */
export const STEP_SAMPLES = 1024;
/** Step length in seconds. */
export const STEP_SEC = STEP_SAMPLES / SAMPLE_RATE;
export const FRAMES_PER_STEP = 4;
export const N_MELS = 64;
/** Floats of `features` per step (4 frames x 64 mels). */
export const FEATURES_PER_STEP = FRAMES_PER_STEP * N_MELS;
/** Level of digital silence, dBFS (10 log10(1e-12)). */
export const SILENCE_DB = -120;
/** decodeAll() refuses longer inputs (seconds). */
export const DECODE_ALL_MAX_SEC = 600;

/** Wall time spent per stage by a FileFrontend so far (seconds), for benchmarks. */
export interface FrontendStats {
  decodeSec: number;
  resampleSec: number;
  featuresSec: number;
  framesDecoded: number;
}

export interface Features {
  /** Step levels in dBFS, length `steps`. */
  levels: Float32Array;
  /** Log-mel features, time-major `[steps * 4][64]`. */
  features: Float32Array;
  steps: number;
}

// ---------------------------------------------------------------------------------------
// Native addon
// ---------------------------------------------------------------------------------------

interface NativeFileFrontend {
  open(): Promise<AudioInfo>;
  read(): Promise<FeatureChunk[] | null>;
  close(): void;
  stats(): FrontendStats;
}

interface NativeStreamFrontend {
  push(buf: Uint8Array): FeatureChunk[];
  end(): FeatureChunk[];
  /** Absent in builds older than the streaming work (then GC frees the state). */
  close?(): void;
}

type NativeFileFrontendClass = new (source: AudioSource, options?: OpenOptions) => NativeFileFrontend;

interface NativeAddon {
  probe(source: AudioSource): Promise<AudioInfo>;
  decodeAll(source: AudioSource, maxSeconds?: number): Promise<{ info: AudioInfo; samples: Float32Array }>;
  resample(samples: Float32Array, inRate: number, chunkSize?: number): Float32Array;
  computeFeatures(samples: Float32Array): Features;
  FileFrontend?: NativeFileFrontendClass;
  StreamFrontend: new (options: StreamOptions) => NativeStreamFrontend;
  streamCount?(): number;
  trimMemory?(): Promise<boolean>;
  gatherStates(views: Float32Array[], out: Float32Array): void;
  scatterStates(src: Float32Array, views: Float32Array[]): void;
  versions: Record<string, string>;
}

let addon: NativeAddon | undefined;

function repoRoot(): string {
  let dir = __dirname;
  for (let i = 0; i < 5; i++) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'CMakeLists.txt'))) return dir;
    dir = path.dirname(dir);
  }
  return path.resolve(__dirname, '..', '..', '..');
}

/** Candidate locations of the compiled addon (AURIS_NATIVE_ADDON overrides). */
export function addonPaths(): string[] {
  if (process.env.AURIS_NATIVE_ADDON) return [path.resolve(process.env.AURIS_NATIVE_ADDON)];
  const root = repoRoot();
  return ['Release', 'Debug'].map((cfg) => path.join(root, 'build', cfg, 'auris_native.node'));
}

function native(): NativeAddon {
  if (addon) return addon;
  const candidates = addonPaths();
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found) {
    throw new Error(
      `auris native addon not found (looked for ${candidates.join(', ')}). ` +
        'Build it with `npm run setup` (installs the Debian build dependencies, then runs cmake-js).',
    );
  }
  try {
    addon = require(found) as NativeAddon;
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    const hint = /undefined symbol|wrong ELF|invalid ELF|NODE_MODULE_VERSION|cannot open shared object/i.test(reason)
      ? ' It was probably built on another machine or against missing libraries (libsndfile1, libsoxr0, libmpg123-0).'
      : '';
    throw new Error(`auris native addon at ${found} failed to load: ${reason}.${hint} Rebuild it with \`npm run setup\`.`, {
      cause: err,
    });
  }
  return addon;
}

function nativeFileFrontendClass(): NativeFileFrontendClass {
  const n = native();
  const cls = n.FileFrontend;
  if (!cls) throw new Error('the native addon has no FileFrontend class; rebuild it with `npm run setup`');
  return cls;
}

/** Copies between streams' model states and one batch ([views.length][per], side by side). */
export interface StateCopy {
  gather(views: Float32Array[], out: Float32Array): void;
  scatter(src: Float32Array, views: Float32Array[]): void;
}

/**
 * The addon's state copies (memcpy): the inference workers keep live streams' states in SharedArrayBuffers, which
 * V8's own copies treat element by element (docs/streaming.md, session 51). Loads the addon.
 */
export function nativeStateCopy(): StateCopy {
  const n = native();
  return {
    gather: (views, out) => sync(() => n.gatherStates(views, out)),
    scatter: (src, views) => sync(() => n.scatterStates(src, views)),
  };
}

/** Versions of the native libraries (libsndfile, mpg123 API, libsoxr). Loads the addon. */
export function nativeVersions(): Record<string, string> {
  return { ...native().versions };
}

/** Runs f, re-typing native errors (plain Error + code) as AudioError. */
function sync<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    throw toAudioError(err);
  }
}

async function async<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    throw toAudioError(err);
  }
}

// ---------------------------------------------------------------------------------------
// API
// ---------------------------------------------------------------------------------------

/** Reads the header of a file or buffer (AudioError on anything that is not decodable audio). */
export function probe(source: AudioSource): Promise<AudioInfo> {
  return async(() => native().probe(source));
}

/**
 * Chunked front end of one file: each read() decodes `chunkSeconds` of audio on the libuv
 * thread pool and returns one FeatureChunk per analysed channel (steps > 0), or null at the
 * end. Concurrent read() calls are served one after the other. A Buffer source is kept
 * referenced until close(); it must not be modified meanwhile.
 */
export class FileFrontend {
  readonly info: AudioInfo;
  /** The analysed channels, in the order of the chunks returned by read(). */
  readonly channels: readonly number[];
  private readonly handle: NativeFileFrontend;
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(handle: NativeFileFrontend, info: AudioInfo, channels: number[]) {
    this.handle = handle;
    this.info = info;
    this.channels = channels;
  }

  /**
   * Opens and validates a file: UNSUPPORTED_FORMAT / CORRUPT_AUDIO / EMPTY_AUDIO / IO_ERROR,
   * INVALID_CHANNEL for a channel the file lacks, DURATION_LIMIT_EXCEEDED when the header
   * already shows more than `maxDurationSec` (frames / rate * analysed channels).
   */
  static async open(source: AudioSource, options: OpenOptions = {}): Promise<FileFrontend> {
    return async(async () => {
      const handle = new (nativeFileFrontendClass())(source, options);
      let info: AudioInfo;
      try {
        info = await handle.open();
      } catch (err) {
        handle.close();
        throw err;
      }
      const channels =
        options.channel !== undefined ? [options.channel] : Array.from({ length: info.channels }, (_, i) => i);
      return new FileFrontend(handle, info, channels);
    });
  }

  /** Next chunk of every analysed channel, or null once the file is done. */
  read(): Promise<FeatureChunk[] | null> {
    const next = this.tail.then(() => {
      if (this.closed) throw new AudioError('INVALID_ARGUMENT', 'FileFrontend is closed');
      return this.handle.read();
    });
    this.tail = next.catch(() => undefined);
    return next.catch((err: unknown) => {
      throw toAudioError(err);
    });
  }

  /** Iterates over read() results until the end of the file (closes on early exit). */
  async *[Symbol.asyncIterator](): AsyncGenerator<FeatureChunk[], void, undefined> {
    try {
      for (;;) {
        const chunks = await this.read();
        if (chunks === null) return;
        yield chunks;
      }
    } finally {
      this.close();
    }
  }

  /** Cumulative stage timings (as of the last completed read). */
  get stats(): FrontendStats {
    return this.handle.stats();
  }

  /** Releases the decoder (after a read in progress, if any). Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.handle.close();
  }
}

/**
 * Front end of raw interleaved PCM pushed in chunks of any size (a chunk may end inside a
 * sample frame). Uses the same resampler and framer as FileFrontend, so streaming a file's
 * samples gives exactly the features of FileFrontend on that file. push()/end() are
 * synchronous: keep chunks small (they run on the calling thread). Each returns one chunk per
 * analysed channel, or [] when no 64 ms step was completed by this call.
 */
export class StreamFrontend {
  private readonly handle: NativeStreamFrontend;

  constructor(options: StreamOptions) {
    this.handle = sync(() => new (native().StreamFrontend)(options));
  }

  push(buf: Uint8Array): FeatureChunk[] {
    return sync(() => this.handle.push(buf));
  }

  /** Flushes the resampler and the framer (zero padding); later push() calls fail. */
  end(): FeatureChunk[] {
    return sync(() => this.handle.end());
  }

  /** Frees the native state now instead of at garbage collection (idempotent); later push()/end() fail. */
  close(): void {
    this.handle.close?.();
  }
}

/** StreamFrontends whose native state is alive (created, neither closed nor collected). */
export function openStreamCount(): number {
  const n = native();
  if (typeof n.streamCount !== 'function') throw new Error('the native addon predates StreamFrontend.close(); rebuild it with `npm run setup`');
  return n.streamCount();
}

/**
 * Gives the C allocator's free memory back to the system (glibc `malloc_trim(0)`, on a pool
 * thread): freed native buffers otherwise stay in the process's RSS. Resolves false when
 * nothing was released or the C library has no such call.
 */
export async function trimNativeMemory(): Promise<boolean> {
  return (await native().trimMemory?.()) ?? false;
}

/**
 * Decodes a whole file to interleaved float32 at its native rate (tests and benchmarks):
 * refuses more than 10 minutes (or 2^27 samples) with DURATION_LIMIT_EXCEEDED.
 * `info.frames` is the number of frames actually decoded when the header did not say.
 */
export function decodeAll(source: AudioSource): Promise<{ info: AudioInfo; samples: Float32Array }> {
  return async(() => native().decodeAll(source, DECODE_ALL_MAX_SEC));
}

/**
 * Resamples mono samples to 16 kHz with the front end's resampler (libsoxr HQ), feeding it
 * `chunkSize` samples at a time (default: all at once); the output does not depend on it.
 */
export function resample(samples: Float32Array, inRate: number, chunkSize?: number): Float32Array {
  return sync(() => native().resample(samples, inRate, chunkSize));
}

/** Levels and log-mel features of a whole 16 kHz mono signal (docs/features.md). */
export function computeFeatures(samples16k: Float32Array): Features {
  return sync(() => native().computeFeatures(samples16k));
}
