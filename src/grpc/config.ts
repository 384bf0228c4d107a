/**
 * Validation of the first Analyze message (StreamConfig) into StreamSession options.
 * Reuses the parameter rules of file jobs (src/analysis/options.ts); every problem is an
 * AurisError with a precise message (the server maps it to INVALID_ARGUMENT).
 */
import { AurisError } from '../analysis/errors';
import { parseModelList, parseOutputPeriod, parseVolumeThreshold } from '../analysis/options';
import type { StreamConfigMsg } from './proto';
import type { StreamSessionOptions } from '../pipeline/analyze-stream';

export const MIN_SAMPLE_RATE = 8000;
export const MAX_SAMPLE_RATE = 384000;
export const MAX_CHANNELS = 32;
export const MAX_STREAM_ID_LENGTH = 128;

export interface ValidatedStreamConfig extends StreamSessionOptions {
  /** The client's stream id ('' when none was given). */
  streamId: string;
}

function invalid(message: string, details?: Record<string, unknown>): AurisError {
  return new AurisError('INVALID_ARGUMENT', message, details);
}

export function validateStreamConfig(cfg: StreamConfigMsg, knownModels: readonly string[], maxOutputPeriodMs?: number): ValidatedStreamConfig {
  let models: string[];
  try {
    models = parseModelList(cfg.models ?? [], knownModels);
  } catch (e) {
    if (e instanceof AurisError && e.code === 'INVALID_ARGUMENT') throw invalid(`config.${e.message}`);
    throw e;
  }

  if (cfg.output_period === undefined || cfg.output_period === 0) {
    throw invalid('config.output_period is required: a positive multiple of 64 (ms of audio per result)');
  }
  let outputPeriodMs: number;
  try {
    outputPeriodMs = parseOutputPeriod(cfg.output_period);
  } catch (e) {
    throw invalid(`config.${(e as Error).message}`);
  }
  if (maxOutputPeriodMs !== undefined && outputPeriodMs > maxOutputPeriodMs) {
    throw invalid(`config.output_period must be at most ${maxOutputPeriodMs} ms, got ${outputPeriodMs}`);
  }

  let volumeThreshold: number;
  try {
    volumeThreshold = parseVolumeThreshold(cfg.volume_threshold);
  } catch (e) {
    throw invalid(`config.${(e as Error).message}`);
  }

  const rate = cfg.sample_rate;
  if (rate === undefined || rate === 0) {
    throw invalid(`config.sample_rate is required: the audio's sample rate in Hz (${MIN_SAMPLE_RATE}..${MAX_SAMPLE_RATE}; 16000 recommended)`);
  }
  if (!Number.isInteger(rate) || rate < MIN_SAMPLE_RATE || rate > MAX_SAMPLE_RATE) {
    throw invalid(`config.sample_rate must be an integer in ${MIN_SAMPLE_RATE}..${MAX_SAMPLE_RATE} Hz, got ${rate}`);
  }

  let encoding: 's16le' | 'f32le';
  switch (cfg.encoding) {
    case 'PCM_S16LE':
      encoding = 's16le';
      break;
    case 'PCM_F32LE':
      encoding = 'f32le';
      break;
    case undefined:
    case 'AUDIO_ENCODING_UNSPECIFIED':
    case 0:
      throw invalid('config.encoding is required: PCM_S16LE or PCM_F32LE');
    default:
      throw invalid(`config.encoding ${JSON.stringify(cfg.encoding)} is not supported: use PCM_S16LE or PCM_F32LE`);
  }

  const channels = cfg.channels === undefined || cfg.channels === 0 ? 1 : cfg.channels;
  if (!Number.isInteger(channels) || channels < 1 || channels > MAX_CHANNELS) {
    throw invalid(`config.channels must be an integer in 1..${MAX_CHANNELS}, got ${channels}`);
  }
  let channel: number;
  if (cfg.channel === undefined) {
    if (channels > 1) {
      throw invalid(
        `config.channel is required when config.channels is ${channels}: a stream analyses one channel (0..${channels - 1}); open one stream per channel to analyse several`,
      );
    }
    channel = 0;
  } else {
    channel = cfg.channel;
    if (!Number.isInteger(channel) || channel < 0 || channel >= channels) {
      throw new AurisError(
        'INVALID_CHANNEL',
        `config.channel ${channel} does not exist: the stream has ${channels} channel${channels === 1 ? '' : 's'} (valid: 0..${channels - 1})`,
        { channel, channels },
      );
    }
  }

  const streamId = cfg.stream_id ?? '';
  if (streamId.length > MAX_STREAM_ID_LENGTH || !/^[\x20-\x7e]*$/.test(streamId)) {
    throw invalid(`config.stream_id must be at most ${MAX_STREAM_ID_LENGTH} printable ASCII characters`);
  }

  return {
    models,
    outputPeriodMs,
    includeRaw: cfg.include_raw_values === true,
    includeSummary: cfg.include_summary === true,
    volumeThreshold,
    sampleRate: rate,
    encoding,
    channels,
    channel,
    streamId,
  };
}
