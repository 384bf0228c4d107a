/**
 * AudioError: the error of src/audio and the native addon, an AurisError whose `code` is one
 * of the addon's (NATIVE_CODES in src/errors.ts, the catalogue; docs/audio.md). `message` is
 * for humans and may change.
 */
import { AurisError, NATIVE_CODES } from '../errors';
import type { AudioErrorCode } from './types';

export const AUDIO_ERROR_CODES: readonly AudioErrorCode[] = NATIVE_CODES;

const CODES = new Set<string>(AUDIO_ERROR_CODES);

export function isAudioErrorCode(code: unknown): code is AudioErrorCode {
  return typeof code === 'string' && CODES.has(code);
}

export class AudioError extends AurisError {
  declare readonly code: AudioErrorCode;

  constructor(code: AudioErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, undefined, options);
    this.name = 'AudioError';
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
