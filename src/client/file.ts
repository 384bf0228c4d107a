/**
 * Streaming an audio file (WAV, FLAC, MP3, ... decoded by the native addon) as a live stream,
 * over either transport: the samples go at the file's own rate and channel count, in chunks of
 * `chunkMs`, as fast as the transport takes them or paced at real time (`realtime`).
 *
 *   const stream = await streamFile({ transport: 'ws', url, apiKey }, 'talk.wav', { models: ['speech'], outputPeriodMs: 1024 });
 *   for await (const m of stream) ...
 */
import { decodeAll } from '../audio';
import type { AudioSource } from '../audio/types';
import { openStream, type AudioStream, type StreamClientOptions, type StreamTarget } from './stream';

export interface FileStreamOptions extends Omit<StreamClientOptions, 'sampleRate' | 'channels' | 'encoding'> {
  /** Sample encoding on the wire (default f32le: the decoded samples, lossless). */
  encoding?: 's16le' | 'f32le';
  /** Audio per message, ms (default 100). */
  chunkMs?: number;
  /** Send at the audio's real pace, like a live source (default false: as fast as accepted). */
  realtime?: boolean;
}

/** Interleaved float32 -> little-endian bytes in the requested encoding. */
export function encodePcm(samples: Float32Array, encoding: 's16le' | 'f32le'): Buffer {
  if (encoding === 'f32le') return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const out = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) {
    const v = Math.max(-1, Math.min(1, samples[i]!));
    out.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(v * 32768))), i * 2);
  }
  return out;
}

/** Time source of the real-time pacing (a test passes a fake one, so pacing is checked without a clock). */
export interface PacingClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const REAL_CLOCK: PacingClock = {
  now: () => performance.now(),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};

/** Decodes the file, opens the stream with its rate and channels, and sends it (then end()); results by iterating the stream. */
export async function streamFile(target: StreamTarget, source: string | AudioSource, options: FileStreamOptions): Promise<AudioStream> {
  const { info, samples } = await decodeAll(typeof source === 'string' ? { path: source } : source);
  const { chunkMs = 100, realtime = false, encoding = 'f32le', ...rest } = options;
  const stream = openStream(target, { ...rest, sampleRate: info.sampleRate, channels: info.channels, encoding });
  const sending = sendPcm(stream, encodePcm(samples, encoding), info.channels * (encoding === 's16le' ? 2 : 4), info.sampleRate, chunkMs, realtime);
  sending.catch(() => undefined); // a refused stream surfaces through the iteration
  return stream;
}

/**
 * Sends the bytes in chunks of chunkMs, then ends. With `realtime`, chunk k + 1 leaves no earlier than
 * the audio time of the first k chunks after the start, like a live source.
 */
export async function sendPcm(
  stream: Pick<AudioStream, 'write' | 'end'>,
  bytes: Buffer,
  frameBytes: number,
  sampleRate: number,
  chunkMs: number,
  realtime: boolean,
  clock: PacingClock = REAL_CLOCK,
): Promise<void> {
  const chunkFrames = Math.max(1, Math.round((chunkMs / 1000) * sampleRate));
  const t0 = clock.now();
  let sentFrames = 0;
  for (let off = 0; off < bytes.length; off += chunkFrames * frameBytes) {
    const piece = bytes.subarray(off, Math.min(bytes.length, off + chunkFrames * frameBytes));
    await stream.write(piece);
    sentFrames += piece.length / frameBytes;
    if (realtime) {
      const wait = t0 + (sentFrames / sampleRate) * 1000 - clock.now();
      if (wait > 0) await clock.sleep(wait);
    }
  }
  stream.end();
}
