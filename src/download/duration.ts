/**
 * The duration of a file from its first bytes, so that a download can stop as soon as the
 * header shows the file is over the duration limit (instead of fetching a 10-hour file).
 *
 *  - WAV / RF64 (RIFF): the header is parsed here (fmt + data, or ds64). The native
 *    addon's probe cannot be used on a partial WAV: it rightly rejects a file whose data
 *    chunk is longer than the bytes it holds.
 *  - FLAC, MP3 and the rest: the native addon's probe() on the partial buffer. FLAC's
 *    STREAMINFO and an MP3 Xing/Info/VBRI header give the exact length; for an MP3 without
 *    one, the probe estimates from the bytes it has, which is never more than the real
 *    length, so the early check never refuses a file the decoder would accept.
 *
 * Inconclusive heads (no header yet, unknown sizes, no addon) give null; the decoder then
 * checks the duration again before decoding, and while decoding.
 */
import type { AudioInfo, AudioSource } from '../audio/types';

export interface HeadDuration {
  durationSec: number;
  channels: number;
  format: string;
}

/** Header-only probe of a buffer (the native addon's). */
export type HeadProbe = (source: AudioSource) => Promise<AudioInfo>;

/** The native addon's probe, loaded on first use; null when the addon is not built. */
export function nativeProbe(): HeadProbe | null {
  try {
    const audio = require('../audio') as typeof import('../audio');
    return (source) => audio.probe(source);
  } catch {
    return null;
  }
}

/** Duration from a WAV/RF64 header at the start of `head`, or null when it cannot be told yet. */
export function wavHeadDuration(head: Buffer): HeadDuration | null {
  if (head.length < 12) return null;
  const riff = head.toString('latin1', 0, 4);
  if ((riff !== 'RIFF' && riff !== 'RF64' && riff !== 'BW64') || head.toString('latin1', 8, 12) !== 'WAVE') return null;
  let channels = 0;
  let sampleRate = 0;
  let blockAlign = 0;
  let ds64Data: number | null = null;
  let off = 12;
  while (off + 8 <= head.length) {
    const id = head.toString('latin1', off, off + 4);
    const size = head.readUInt32LE(off + 4);
    const body = off + 8;
    if (id === 'ds64' && body + 16 <= head.length) {
      ds64Data = Number(head.readBigUInt64LE(body + 8));
    } else if (id === 'fmt ' && body + 16 <= head.length) {
      channels = head.readUInt16LE(body + 2);
      sampleRate = head.readUInt32LE(body + 4);
      blockAlign = head.readUInt16LE(body + 12);
    } else if (id === 'data') {
      if (!channels || !sampleRate || !blockAlign) return null;
      const bytes = size === 0xffffffff && ds64Data !== null ? ds64Data : size;
      // 0 and 0xffffffff: a streamed WAV of unknown length.
      if (bytes === 0 || bytes === 0xffffffff) return null;
      return { durationSec: Math.floor(bytes / blockAlign) / sampleRate, channels, format: riff === 'RIFF' ? 'WAV' : 'RF64' };
    }
    off = body + size + (size & 1);
  }
  return null;
}

/** Duration from the first bytes of a file, or null when they do not tell it. */
export async function headDuration(head: Buffer, probe: HeadProbe | null): Promise<HeadDuration | null> {
  const riff = head.toString('latin1', 0, 4);
  if (riff === 'RIFF' || riff === 'RF64' || riff === 'BW64') return wavHeadDuration(head);
  if (!probe) return null;
  try {
    const info = await probe({ buffer: head });
    if (!(info.durationSec > 0) || !(info.channels > 0)) return null;
    return { durationSec: info.durationSec, channels: info.channels, format: info.format };
  } catch {
    return null; // not enough bytes yet, or not audio: the decoder will say which
  }
}
