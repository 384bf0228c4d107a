/**
 * AudioError: the one error type of src/audio. `code` is stable (see AudioErrorCode in
 * ./types and docs/audio.md); `message` is for humans and may change.
 */
import type { AudioErrorCode } from './types';

export const AUDIO_ERROR_CODES: readonly AudioErrorCode[] = [
  'UNSUPPORTED_FORMAT',
  'CORRUPT_AUDIO',
  'EMPTY_AUDIO',
  'INVALID_CHANNEL',
  'DURATION_LIMIT_EXCEEDED',
  'INVALID_ARGUMENT',
  'IO_ERROR',
];

const CODES = new Set<string>(AUDIO_ERROR_CODES);

export function isAudioErrorCode(code: unknown): code is AudioErrorCode {
  return typeof code === 'string' && CODES.has(code);
}

export class AudioError extends Error {
  readonly code: AudioErrorCode;

  constructor(code: AudioErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AudioError';
    this.code = code;
  }
}

/** Re-types an error thrown by the native addon (a plain Error with a `code`) as AudioError. */
export function toAudioError(err: unknown): unknown {
  if (err instanceof AudioError) return err;
  if (err instanceof Error) {
    const code = (err as Error & { code?: unknown }).code;
    if (isAudioErrorCode(code)) return new AudioError(code, err.message);
  }
  return err;
}
