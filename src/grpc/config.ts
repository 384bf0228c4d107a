/** Validation of the first Analyze message (StreamConfig): the shared stream rules, with gRPC's names. */
import type { StreamEncoding } from '../pipeline/analyze-stream';
import { validateStreamParams, type ResultsMode, type ValidatedStreamConfig } from '../streaming/config';
import type { StreamConfigMsg } from './proto';

/** AudioEncoding enum names -> sample encoding (G.711 at 8 kHz for telephony). */
export const GRPC_ENCODINGS: Readonly<Record<string, StreamEncoding>> = { PCM_S16LE: 's16le', PCM_F32LE: 'f32le', PCM_MULAW: 'mulaw', PCM_ALAW: 'alaw' };

/** ResultsMode enum names -> results mode (UNSPECIFIED: all). */
export const GRPC_RESULTS_MODES: Readonly<Record<string, ResultsMode>> = { RESULTS_MODE_ALL: 'all', RESULTS_MODE_FINAL: 'final' };

export function validateStreamConfig(cfg: StreamConfigMsg, knownModels: readonly string[], maxOutputPeriodMs?: number): ValidatedStreamConfig {
  return validateStreamParams(cfg, knownModels, { prefix: 'config.', encodings: GRPC_ENCODINGS, resultsModes: GRPC_RESULTS_MODES, ...(maxOutputPeriodMs !== undefined ? { maxOutputPeriodMs } : {}) });
}
