/**
 * Validation of the job/CLI parameters shared by every front door (CLI, HTTP, streaming).
 * Pure: no I/O. Throws AurisError with code INVALID_ARGUMENT / UNKNOWN_MODEL.
 */
import { AurisError } from '../errors';

/** Length of one model step, ms (1024 samples at 16 kHz). */
export const STEP_MS = 64;
/** Largest accepted output_period: one hour (the SPEC's maximum duration), a multiple of 64. */
export const MAX_OUTPUT_PERIOD_MS = 3_600_000;
/**
 * Default silence gate, dBFS. -60 since session 42 (was -50): at -50 the quiet edges and short pauses of a voice's
 * words, phone lines most, were `silence` for every model (docs/speakers.md, "Quiet recordings and phone calls").
 */
export const DEFAULT_VOLUME_THRESHOLD_DB = -60;
/** Accepted volume_threshold range, dBFS. -120 = digital silence (gate off), 0 = full scale. */
export const MIN_VOLUME_THRESHOLD_DB = -120;
export const MAX_VOLUME_THRESHOLD_DB = 0;

/**
 * The analysis a caller asks for, validated: the one options shape from every front door
 * (REST job -> job record -> worker, CLI, library, gRPC/WebSocket stream config) to
 * post-processing. A job record stores it on disk in its wire form (src/jobs/request.ts).
 */
export interface AnalysisRequest {
  /** Requested models, de-duplicated, in request order (this is also the output key order). */
  models: readonly string[];
  /** ms, a positive multiple of 64. */
  outputPeriodMs: number;
  /** Analyse only this channel (0-based); undefined = every channel. */
  channel?: number;
  includeSummary: boolean;
  includeTransitions: boolean;
  includeRaw: boolean;
  /** dBFS; output steps whose level is below this are `silence`. Unset: DEFAULT_VOLUME_THRESHOLD_DB. */
  volumeThreshold?: number;
  /** The speakers model: the caller knows the number of speakers per channel (1..MAX_SPEAKERS). */
  numSpeakers?: number;
  /** The speakers model: at most this many speakers per channel (unset: the model's default). */
  maxSpeakers?: number;
}

/** The silence gate of a request, dBFS (the default when it sets none). */
export function volumeThresholdOf(request: Pick<AnalysisRequest, 'volumeThreshold'>): number {
  return request.volumeThreshold ?? DEFAULT_VOLUME_THRESHOLD_DB;
}

/** Loose input of parseAnalysisRequest: numbers may come as strings (query parameters, CLI flags). */
export interface AnalysisRequestInput {
  models: string | readonly string[];
  outputPeriodMs: number | string;
  channel?: number | string | null;
  includeSummary?: boolean | string | null;
  includeTransitions?: boolean | string | null;
  includeRaw?: boolean | string | null;
  volumeThreshold?: number | string | null;
  numSpeakers?: number | string | null;
  maxSpeakers?: number | string | null;
}

function invalid(message: string, details?: Record<string, unknown>): AurisError {
  return new AurisError('INVALID_ARGUMENT', message, details);
}

/** Parses "speech, arousal" or ["speech","arousal"] into a de-duplicated list; checks names when `known` is given. */
export function parseModelList(models: string | readonly string[], known?: readonly string[]): string[] {
  const parts = (typeof models === 'string' ? models.split(',') : [...models]).map((m) => String(m).trim());
  const out: string[] = [];
  for (const m of parts) {
    if (m === '') continue;
    if (!out.includes(m)) out.push(m);
  }
  if (out.length === 0) throw invalid('models: at least one model name is required');
  if (known) {
    const unknown = out.filter((m) => !known.includes(m));
    if (unknown.length > 0) throw unknownModelError(unknown, known);
  }
  return out;
}

export function unknownModelError(unknown: readonly string[], known: readonly string[]): AurisError {
  const valid = known.length > 0 ? [...known].sort().join(', ') : '(none installed)';
  return new AurisError(
    'UNKNOWN_MODEL',
    `unknown model${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}; valid models: ${valid}`,
    { unknown: [...unknown], valid: [...known].sort() },
  );
}

function toNumber(name: string, v: number | string): number {
  if (typeof v === 'number') return v;
  const s = v.trim();
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) throw invalid(`${name}: not a number: ${JSON.stringify(v)}`);
  return Number(s);
}

/** output_period in ms: a positive integer multiple of 64, at most MAX_OUTPUT_PERIOD_MS. */
export function parseOutputPeriod(v: number | string): number {
  const n = toNumber('output_period', v);
  if (!Number.isInteger(n) || n <= 0 || n % STEP_MS !== 0) {
    throw invalid(`output_period must be a positive multiple of ${STEP_MS} ms, got ${String(v)}`);
  }
  if (n > MAX_OUTPUT_PERIOD_MS) {
    throw invalid(`output_period must be at most ${MAX_OUTPUT_PERIOD_MS} ms, got ${n}`);
  }
  return n;
}

/** volume_threshold in dBFS, within [-120, 0]; undefined/null -> the default (-60). */
export function parseVolumeThreshold(v: number | string | null | undefined): number {
  if (v === undefined || v === null || v === '') return DEFAULT_VOLUME_THRESHOLD_DB;
  const n = toNumber('volume_threshold', v);
  if (!Number.isFinite(n) || n < MIN_VOLUME_THRESHOLD_DB || n > MAX_VOLUME_THRESHOLD_DB) {
    throw invalid(
      `volume_threshold must be a level in dBFS between ${MIN_VOLUME_THRESHOLD_DB} and ${MAX_VOLUME_THRESHOLD_DB}, got ${String(v)}`,
    );
  }
  return n;
}

/** channel: a non-negative integer or undefined (= all channels). Whether the file has it is checked later. */
export function parseChannel(v: number | string | null | undefined): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const n = toNumber('channel', v);
  if (!Number.isInteger(n) || n < 0) throw new AurisError('INVALID_CHANNEL', `channel must be a non-negative integer, got ${String(v)}`);
  return n;
}

export function parseBoolean(name: string, v: boolean | string | null | undefined): boolean {
  if (v === undefined || v === null || v === '') return false;
  if (typeof v === 'boolean') return v;
  const s = v.trim().toLowerCase();
  if (s === 'true' || s === '1') return true;
  if (s === 'false' || s === '0') return false;
  throw invalid(`${name} must be true or false, got ${JSON.stringify(v)}`);
}

/** Bound of num_speakers and max_speakers (src/speakers/manifest.ts MAX_SPEAKERS). */
export const SPEAKER_COUNT_LIMIT = 20;
/** The model num_speakers and max_speakers apply to. */
const SPEAKERS_MODEL = 'speakers';

/** num_speakers / max_speakers: an integer in 1..SPEAKER_COUNT_LIMIT, or undefined. */
export function parseSpeakerCount(name: string, v: number | string | null | undefined): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const n = toNumber(name, v);
  if (!Number.isInteger(n) || n < 1 || n > SPEAKER_COUNT_LIMIT) {
    throw invalid(`${name} must be an integer between 1 and ${SPEAKER_COUNT_LIMIT}, got ${String(v)}`);
  }
  return n;
}

/** num_speakers / max_speakers need the speakers model, and a count within the cap. */
export function checkSpeakerCounts(models: readonly string[], numSpeakers: number | undefined, maxSpeakers: number | undefined): void {
  if ((numSpeakers !== undefined || maxSpeakers !== undefined) && !models.includes(SPEAKERS_MODEL)) {
    throw invalid(`${numSpeakers !== undefined ? 'num_speakers' : 'max_speakers'} applies to the ${SPEAKERS_MODEL} model, which is not requested`);
  }
  if (numSpeakers !== undefined && maxSpeakers !== undefined && numSpeakers > maxSpeakers) {
    throw invalid(`num_speakers (${numSpeakers}) must not exceed max_speakers (${maxSpeakers})`);
  }
}

/**
 * Validates and normalises every parameter; `knownModels` (registry names) enables the
 * UNKNOWN_MODEL check. An AnalysisRequest passes unchanged (with the default gate filled in).
 */
export function parseAnalysisRequest(input: AnalysisRequestInput, knownModels?: readonly string[]): AnalysisRequest {
  const out: AnalysisRequest = {
    models: parseModelList(input.models, knownModels),
    outputPeriodMs: parseOutputPeriod(input.outputPeriodMs),
    includeSummary: parseBoolean('include_summary', input.includeSummary),
    includeTransitions: parseBoolean('include_transitions', input.includeTransitions),
    includeRaw: parseBoolean('include_raw_values', input.includeRaw),
    volumeThreshold: parseVolumeThreshold(input.volumeThreshold),
  };
  const channel = parseChannel(input.channel);
  if (channel !== undefined) out.channel = channel;
  const numSpeakers = parseSpeakerCount('num_speakers', input.numSpeakers);
  const maxSpeakers = parseSpeakerCount('max_speakers', input.maxSpeakers);
  checkSpeakerCounts(out.models, numSpeakers, maxSpeakers);
  if (numSpeakers !== undefined) out.numSpeakers = numSpeakers;
  if (maxSpeakers !== undefined) out.maxSpeakers = maxSpeakers;
  return out;
}

/**
 * The channels to analyse: all of `0..channelsInFile-1`, or just `channel`.
 * A channel the file does not have -> INVALID_CHANNEL.
 */
export function selectChannels(channelsInFile: number, channel?: number): number[] {
  if (channel === undefined) return Array.from({ length: channelsInFile }, (_, i) => i);
  if (!Number.isInteger(channel) || channel < 0 || channel >= channelsInFile) {
    throw new AurisError(
      'INVALID_CHANNEL',
      `channel ${channel} does not exist: the file has ${channelsInFile} channel${channelsInFile === 1 ? '' : 's'} (valid: 0..${channelsInFile - 1})`,
      { channel, channels: channelsInFile },
    );
  }
  return [channel];
}
