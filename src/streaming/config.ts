/**
 * Validation of a live stream's parameters (gRPC's StreamConfig message, the WebSocket's query)
 * into StreamSession options. Reuses the parameter rules of file jobs (src/analysis/options.ts);
 * every problem is an AurisError with a precise message naming the parameter as the transport
 * spells it (`config.sample_rate` for gRPC, `sample_rate` for the WebSocket).
 */
import { AurisError } from '../errors';
import { checkSpeakerCounts, parseModelList, parseOutputPeriod, parseSpeakerCount, parseVolumeThreshold } from '../analysis/options';
import type { StreamEncoding, StreamSessionOptions } from '../pipeline/analyze-stream';

/** A stream's parameters, as either transport carries them (snake_case, like the file-job query). */
export interface StreamParams {
  models?: readonly string[] | string;
  output_period?: number;
  include_raw_values?: boolean;
  include_summary?: boolean;
  include_transitions?: boolean;
  volume_threshold?: number;
  sample_rate?: number;
  /** A name of the transport's `encodings` table (gRPC: the enum name, or a number it does not know). */
  encoding?: string | number;
  channels?: number;
  channel?: number;
  stream_id?: string;
  /** The speakers model: 1..20 (gRPC: 0 = not given). */
  num_speakers?: number;
  max_speakers?: number;
  /** Which results the client wants: a name of the transport's `resultsModes` table (gRPC: the enum name, or a number it does not know). */
  results?: string | number;
}

/** all: provisional results then finals (the default); final: finals only (the results before provisional results existed). */
export type ResultsMode = 'all' | 'final';

export interface StreamParamRules {
  /** Prepended to parameter names in messages ('config.' for gRPC). */
  prefix: string;
  /** Accepted encoding names (in the order messages list them) -> sample encoding. */
  encodings: Readonly<Record<string, StreamEncoding>>;
  /** Encoding when none is given (undefined: required). */
  defaultEncoding?: StreamEncoding;
  maxOutputPeriodMs?: number;
  /** Accepted `results` names -> mode (absent, '' or 0: all). */
  resultsModes: Readonly<Record<string, ResultsMode>>;
}

export const MIN_SAMPLE_RATE = 8000;
export const MAX_SAMPLE_RATE = 384000;
export const MAX_CHANNELS = 32;
export const MAX_STREAM_ID_LENGTH = 128;

export interface ValidatedStreamConfig extends StreamSessionOptions {
  /** The client's stream id ('' when none was given). */
  streamId: string;
  results: ResultsMode;
}

function invalid(message: string, details?: Record<string, unknown>): AurisError {
  return new AurisError('INVALID_ARGUMENT', message, details);
}

function encodingList(names: readonly string[]): string {
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`;
}

export function validateStreamParams(cfg: StreamParams, knownModels: readonly string[], rules: StreamParamRules): ValidatedStreamConfig {
  const { prefix } = rules;
  // In this order: a config with several problems gets the same first message on every transport.
  const models = streamModels(cfg, knownModels, prefix);
  const outputPeriodMs = streamOutputPeriod(cfg, prefix, rules.maxOutputPeriodMs);
  const volumeThreshold = withPrefix(prefix, () => parseVolumeThreshold(cfg.volume_threshold));
  const sampleRate = streamSampleRate(cfg, prefix);
  const encoding = streamEncoding(cfg, rules, sampleRate);
  const { channels, channel } = streamChannel(cfg, prefix);
  const streamId = streamIdOf(cfg, prefix);
  const results = streamResults(cfg, rules);
  // proto3 has no absent integer: 0 means not given, as for channels
  const count = (k: 'num_speakers' | 'max_speakers'): number | undefined => withPrefix(prefix, () => parseSpeakerCount(k, cfg[k] === 0 ? undefined : cfg[k]));
  const numSpeakers = count('num_speakers');
  const maxSpeakers = count('max_speakers');
  withPrefix(prefix, () => checkSpeakerCounts(models, numSpeakers, maxSpeakers));
  return {
    ...(numSpeakers !== undefined ? { numSpeakers } : {}),
    ...(maxSpeakers !== undefined ? { maxSpeakers } : {}),
    models,
    outputPeriodMs,
    includeRaw: cfg.include_raw_values === true,
    includeSummary: cfg.include_summary === true,
    includeTransitions: cfg.include_transitions === true,
    volumeThreshold,
    sampleRate,
    encoding,
    channels,
    channel,
    streamId,
    results,
    provisional: results === 'all',
  };
}

function streamResults(cfg: StreamParams, rules: StreamParamRules): ResultsMode {
  const v = cfg.results;
  if (v === undefined || v === '' || v === 0 || v === 'RESULTS_MODE_UNSPECIFIED') return 'all';
  const mode = rules.resultsModes[String(v)];
  if (!mode) throw invalid(`${rules.prefix}results ${JSON.stringify(v)} is not supported: use ${encodingList(Object.keys(rules.resultsModes))}`);
  return mode;
}

/** Runs a file-job parameter rule; its message gets the transport's parameter prefix. */
function withPrefix<T>(prefix: string, parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    throw invalid(`${prefix}${(e as Error).message}`);
  }
}

function streamModels(cfg: StreamParams, knownModels: readonly string[], prefix: string): string[] {
  try {
    return parseModelList(cfg.models ?? [], knownModels);
  } catch (e) {
    if (e instanceof AurisError && e.code === 'INVALID_ARGUMENT') throw invalid(`${prefix}${e.message}`);
    throw e;
  }
}

function streamOutputPeriod(cfg: StreamParams, prefix: string, maxOutputPeriodMs: number | undefined): number {
  const requested = cfg.output_period;
  if (requested === undefined || requested === 0) {
    throw invalid(`${prefix}output_period is required: a positive multiple of 64 (ms of audio per result)`);
  }
  const outputPeriodMs = withPrefix(prefix, () => parseOutputPeriod(requested));
  if (maxOutputPeriodMs !== undefined && outputPeriodMs > maxOutputPeriodMs) {
    throw invalid(`${prefix}output_period must be at most ${maxOutputPeriodMs} ms, got ${outputPeriodMs}`);
  }
  return outputPeriodMs;
}

function streamSampleRate(cfg: StreamParams, prefix: string): number {
  const rate = cfg.sample_rate;
  if (rate === undefined || rate === 0) {
    throw invalid(`${prefix}sample_rate is required: the audio's sample rate in Hz (${MIN_SAMPLE_RATE}..${MAX_SAMPLE_RATE}; 16000 recommended)`);
  }
  if (!Number.isInteger(rate) || rate < MIN_SAMPLE_RATE || rate > MAX_SAMPLE_RATE) {
    throw invalid(`${prefix}sample_rate must be an integer in ${MIN_SAMPLE_RATE}..${MAX_SAMPLE_RATE} Hz, got ${rate}`);
  }
  return rate;
}

function streamEncoding(cfg: StreamParams, rules: StreamParamRules, rate: number): StreamEncoding {
  const { prefix } = rules;
  const names = Object.keys(rules.encodings);
  let encoding: StreamEncoding;
  if (cfg.encoding === undefined || cfg.encoding === '' || cfg.encoding === 0 || cfg.encoding === 'AUDIO_ENCODING_UNSPECIFIED') {
    if (!rules.defaultEncoding) throw invalid(`${prefix}encoding is required: ${encodingList(names)}`);
    encoding = rules.defaultEncoding;
  } else {
    const e = rules.encodings[String(cfg.encoding)];
    if (!e) throw invalid(`${prefix}encoding ${JSON.stringify(cfg.encoding)} is not supported: use ${encodingList(names)}`);
    encoding = e;
  }
  if ((encoding === 'mulaw' || encoding === 'alaw') && rate !== 8000) {
    throw invalid(`${prefix}encoding ${String(cfg.encoding)} (G.711) needs sample_rate 8000, got ${rate}`);
  }
  return encoding;
}

/** The interleaved channel count and the one channel analysed (required when there are several). */
function streamChannel(cfg: StreamParams, prefix: string): { channels: number; channel: number } {
  const channels = cfg.channels === undefined || cfg.channels === 0 ? 1 : cfg.channels;
  if (!Number.isInteger(channels) || channels < 1 || channels > MAX_CHANNELS) {
    throw invalid(`${prefix}channels must be an integer in 1..${MAX_CHANNELS}, got ${channels}`);
  }
  if (cfg.channel === undefined) {
    if (channels > 1) {
      throw invalid(
        `${prefix}channel is required when ${prefix}channels is ${channels}: a stream analyses one channel (0..${channels - 1}); open one stream per channel to analyse several`,
      );
    }
    return { channels, channel: 0 };
  }
  const channel = cfg.channel;
  if (!Number.isInteger(channel) || channel < 0 || channel >= channels) {
    throw new AurisError(
      'INVALID_CHANNEL',
      `${prefix}channel ${channel} does not exist: the stream has ${channels} channel${channels === 1 ? '' : 's'} (valid: 0..${channels - 1})`,
      { channel, channels },
    );
  }
  return { channels, channel };
}

function streamIdOf(cfg: StreamParams, prefix: string): string {
  const streamId = cfg.stream_id ?? '';
  if (streamId.length > MAX_STREAM_ID_LENGTH || !/^[\x20-\x7e]*$/.test(streamId)) {
    throw invalid(`${prefix}stream_id must be at most ${MAX_STREAM_ID_LENGTH} printable ASCII characters`);
  }
  return streamId;
}
