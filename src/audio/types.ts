/**
 * The contract of the native addon (native/addon.cc), as seen from TypeScript.
 * src/audio/index.ts loads the addon and re-exports these with friendly errors.
 * See docs/features.md for the numbers behind steps, levels and features.
 */
import type { NATIVE_CODES } from '../errors';

/** Where the audio comes from: a file on disk or bytes in memory. */
export type AudioSource = { path: string } | { buffer: Buffer };

/** Facts about a decoded file, known after the header is read. */
export interface AudioInfo {
  /** Native sample rate of the file, Hz. */
  sampleRate: number;
  channels: number;
  /**
   * Frames (samples per channel) at the native rate, as declared by the container.
   * -1 when the container does not declare its length (e.g. FLAC written to a pipe);
   * the length is then only known once the file has been decoded.
   */
  frames: number;
  /** frames / sampleRate; -1 when frames is -1. */
  durationSec: number;
  /** Container: 'WAV' | 'FLAC' | 'MP3' | 'OGG' | 'RF64' | 'W64' | 'AIFF' | 'AU' | 'CAF' | 'MPEG' (layer I/II). */
  format: string;
  /** Sample encoding: 'PCM_16', 'PCM_24', 'FLOAT', 'MPEG_LAYER_III', ... */
  subtype: string;
  /** A WAV whose data chunk is shorter than its header declares: `frames` counts what is there, which is decoded. */
  truncated?: boolean;
}

/** Front-end output for one channel over a run of consecutive 64 ms steps. */
export interface FeatureChunk {
  /** Channel index in the source (0-based). */
  channel: number;
  /** Index of the first step of this chunk within the channel. */
  startStep: number;
  /** Number of steps in this chunk. */
  steps: number;
  /** Step levels in dBFS, length `steps`. */
  levels: Float32Array;
  /** Log-mel features, time-major, length `steps * 4 * 64`. */
  features: Float32Array;
  /** The steps' 16 kHz samples, length `steps * 1024` (zeros past the signal end): input of the pretrained encoders (absent in synthetic test chunks: the encoder views then abstain). */
  pcm?: Float32Array;
}

export interface OpenOptions {
  /** Analyse only this channel (0-based); default: every channel. */
  channel?: number;
  /** Audio decoded per read() call, seconds, in (0, 600] (default 30). Bounds memory. */
  chunkSeconds?: number;
  /** Reject files longer than this (combined over the analysed channels), seconds. */
  maxDurationSec?: number;
}

/** Raw PCM layout of a StreamFrontend input (interleaved, little-endian). */
export type SampleEncoding = 's16le' | 'f32le';

/** Options of `new StreamFrontend(...)` (raw PCM pushed in chunks, e.g. a gRPC stream). */
export interface StreamOptions {
  /** Input sample rate, integer Hz in 8000..384000. */
  sampleRate: number;
  /** Interleaved channels in the input, 1..32. */
  channels: number;
  encoding: SampleEncoding;
  /** Analyse only this channel (0-based); default: every channel. */
  channel?: number;
}

/** Stable error codes raised by the addon (Error.code): NATIVE_CODES of the catalogue (src/errors.ts). */
export type AudioErrorCode = (typeof NATIVE_CODES)[number];
