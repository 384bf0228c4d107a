/**
 * JSON schemas of the REST API: request validation and the OpenAPI document are both
 * generated from these.
 */
import type { Config } from '../config';
import { JOB_ERROR_CODES } from '../errors';
import { SPEAKER_COUNT_LIMIT } from '../analysis/options';
import { CALLBACK_STATES } from '../jobs/types';
import { PROBLEM_CONTENT_TYPE, problemSchema } from './errors';
import { metadataSchema } from './metadata';

export const AUDIO_MEDIA_TYPES = [
  'audio/wav',
  'audio/x-wav',
  'audio/wave',
  'audio/vnd.wave',
  'audio/flac',
  'audio/x-flac',
  'audio/mpeg',
  'audio/mp3',
  'audio/mpeg3',
  'audio/x-mpeg-3',
  'audio/x-mp3',
  'audio/ogg',
  'audio/opus',
  'application/ogg',
  'application/octet-stream',
] as const;

export const JSON_MEDIA_TYPE = 'application/json';

export function createJobQuerySchema(config: Config, volumeRange: { min: number; max: number }) {
  return {
    type: 'object',
    required: ['models', 'output_period'],
    additionalProperties: false,
    properties: {
      models: {
        type: 'string',
        minLength: 1,
        maxLength: 256,
        pattern: '^[A-Za-z0-9_-]+(,[A-Za-z0-9_-]+)*$',
        description: 'Comma-separated model names, e.g. `speech,arousal,gender`. An unknown name gives 400 UNKNOWN_MODEL listing the valid ones.',
        example: 'speech,arousal,gender',
      },
      output_period: {
        type: 'integer',
        minimum: 64,
        maximum: config.limits.maxOutputPeriodMs,
        multipleOf: 64,
        description: `Milliseconds between time steps of the output; a positive multiple of 64, at most ${config.limits.maxOutputPeriodMs}.`,
        example: 1024,
      },
      channel: {
        type: 'integer',
        minimum: 0,
        maximum: 255,
        description: 'Analyse only this channel (0-based). Default: every channel. A channel the file does not have fails the job with INVALID_CHANNEL.',
      },
      include_summary: { type: 'boolean', default: false, description: 'Add `summary` (fractions per class) to each channel.' },
      include_transitions: { type: 'boolean', default: false, description: 'Add `transitions` (segments) to each channel.' },
      include_raw_values: { type: 'boolean', default: false, description: 'Add `raw` (class probabilities) to each time step.' },
      volume_threshold: {
        type: 'number',
        minimum: volumeRange.min,
        maximum: volumeRange.max,
        description: 'Silence gate level (see docs/results.md for unit and default). A higher value makes more of the audio count as silence.',
      },
      num_speakers: {
        type: 'integer',
        minimum: 1,
        maximum: SPEAKER_COUNT_LIMIT,
        description: 'The `speakers` model only: the number of speakers in each channel, when you know it (docs/speakers.md). Default: estimated.',
      },
      max_speakers: {
        type: 'integer',
        minimum: 1,
        maximum: SPEAKER_COUNT_LIMIT,
        description: 'The `speakers` model only: at most this many speakers per channel (default: the model\'s, see GET /models). Not below num_speakers.',
      },
      metadata: {
        type: 'string',
        maxLength: 8192,
        description: 'Your own key/value strings as a JSON object (URL-encoded), echoed in the job record and the callback; see the `metadata` body field for the limits. The URL method may give it in the body instead.',
        example: '{"customer":"c-1042"}',
      },
      callback: {
        type: 'string',
        format: 'uri',
        maxLength: 2048,
        pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
        description: 'Absolute http(s) URL; the job record is POSTed to it when the job finishes.',
      },
    },
  } as const;
}

export const urlBodySchema = {
  type: 'object',
  required: ['url'],
  additionalProperties: false,
  properties: {
    url: { type: 'string', format: 'uri', maxLength: 4096, pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', description: 'http(s) address of the audio file' },
    metadata: metadataSchema,
  },
} as const;

const nullable = <T extends object>(schema: T) => ({ ...schema, nullable: true });

export const jobRecordSchema = {
  $id: 'Job',
  type: 'object',
  description: 'A file-processing job. Also the body of the job-finished callback.',
  required: [
    'job_id', 'status', 'progress', 'created_at', 'started_at', 'finished_at', 'expires_at',
    'request', 'source', 'audio', 'results_url', 'results_size_bytes', 'error', 'metadata', 'callback', 'warnings',
  ],
  properties: {
    job_id: { type: 'string', format: 'uuid' },
    status: { type: 'string', enum: ['queued', 'processing', 'succeeded', 'failed'] },
    progress: { type: 'number', minimum: 0, maximum: 1, description: '0 while queued, 0..1 while processing, 1 when succeeded' },
    created_at: { type: 'string', format: 'date-time' },
    started_at: nullable({ type: 'string', format: 'date-time', description: 'Start of the latest processing attempt' }),
    finished_at: nullable({ type: 'string', format: 'date-time' }),
    expires_at: nullable({ type: 'string', format: 'date-time', description: 'When the job and its results will be purged' }),
    request: {
      type: 'object',
      description: 'The parameters given at creation',
      required: ['models', 'output_period', 'channel', 'include_summary', 'include_transitions', 'include_raw_values', 'volume_threshold', 'callback'],
      properties: {
        models: { type: 'array', items: { type: 'string' } },
        output_period: { type: 'integer' },
        channel: nullable({ type: 'integer' }),
        include_summary: { type: 'boolean' },
        include_transitions: { type: 'boolean' },
        include_raw_values: { type: 'boolean' },
        volume_threshold: nullable({ type: 'number' }),
        num_speakers: { type: 'integer', description: 'Present when given (the speakers model)' },
        max_speakers: { type: 'integer', description: 'Present when given (the speakers model)' },
        callback: nullable({ type: 'string' }),
      },
    },
    source: {
      type: 'object',
      required: ['method', 'url', 'content_type', 'size_bytes'],
      properties: {
        method: { type: 'string', enum: ['url', 'upload'] },
        url: nullable({ type: 'string' }),
        content_type: nullable({ type: 'string' }),
        size_bytes: nullable({ type: 'integer' }),
      },
    },
    audio: nullable({
      type: 'object',
      description: 'Facts about the audio, once its header has been read',
      required: ['duration_sec', 'channels', 'sample_rate', 'format', 'processed_channels'],
      properties: {
        duration_sec: { type: 'number' },
        channels: { type: 'integer' },
        sample_rate: { type: 'integer' },
        format: { type: 'string' },
        processed_channels: { type: 'integer' },
      },
    }),
    results_url: nullable({ type: 'string', description: 'Path of the results once succeeded' }),
    results_size_bytes: nullable({ type: 'integer' }),
    error: nullable({
      type: 'object',
      description: 'Why the job failed',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', enum: [...JOB_ERROR_CODES] },
        message: { type: 'string' },
      },
    }),
    metadata: nullable({ ...metadataSchema, description: 'The metadata given at creation, else null' }),
    callback: nullable({
      type: 'object',
      description: 'Delivery state of the job-finished callback; null when the job has none',
      required: ['url', 'state', 'attempts', 'last_status', 'last_error'],
      properties: {
        url: { type: 'string' },
        state: { type: 'string', enum: [...CALLBACK_STATES], description: 'pending until delivery ended; delivered (2xx), failed (retries used up or a final status), refused (URL not allowed)' },
        attempts: { type: 'integer', minimum: 0 },
        last_status: nullable({ type: 'integer', description: 'HTTP status of the latest attempt' }),
        last_error: nullable({ type: 'string', description: 'Why the latest attempt failed (refusals start with "refused:")' }),
      },
    }),
    warnings: {
      type: 'array',
      description: 'Problems the job got past (e.g. TRUNCATED_AUDIO); empty when none',
      items: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string', example: 'TRUNCATED_AUDIO' }, message: { type: 'string' } } },
    },
  },
} as const;

/** What the installed models can put in the results (GET /models): the results schema's enums. */
export interface ResultVocabulary {
  /** Every `result` value. */
  labels: string[];
  /** Model names (keys of `results`, `summary`, `transitions`, `raw`). */
  models: string[];
  /** Keys of `raw` entries. */
  rawKeys: string[];
  /** Keys of `summary` entries. */
  summaryKeys: string[];
}

const EXAMPLE_RESULTS = {
  job_id: '4b0d1c8e-5a0e-4f43-9a43-1f7b1f3f2c11',
  result: {
    channels: {
      '0': {
        time_series: [
          { timestamp: 0, results: { speech: { result: 'speech', confidence: 0.97 }, gender: { result: 'female', confidence: 0.91 } } },
          { timestamp: 1024, results: { speech: { result: 'music', confidence: 0.88 }, gender: { result: 'no_speech', confidence: 0.88 } } },
        ],
        summary: { speech: { speech_fraction: 0.5, music_fraction: 0.5, other_fraction: 0, silence_fraction: 0 } },
        transitions: {
          speech: [
            { timestamp_start: 0, timestamp_end: 1024, result: 'speech', confidence: 0.97 },
            { timestamp_start: 1024, timestamp_end: 2048, result: 'music', confidence: 0.88 },
          ],
        },
      },
    },
  },
};

const enumOf = (values: string[]) => (values.length ? { enum: [...new Set(values)].sort() } : {});

/** The results envelope (docs/results.md), with the installed models' labels as enums. */
export function resultsSchema(v: ResultVocabulary) {
  const label = { type: 'string', ...enumOf(v.labels) };
  const perModel = <T extends object>(value: T) => ({ type: 'object', additionalProperties: value, ...(v.models.length ? { description: `Keys: the requested models (${v.models.join(', ')})` } : {}) });
  return {
    type: 'object',
    description: 'The results envelope (docs/results.md).',
    required: ['job_id', 'result'],
    example: EXAMPLE_RESULTS,
    properties: {
      job_id: { type: 'string', format: 'uuid' },
      result: {
        type: 'object',
        required: ['channels'],
        properties: {
          channels: {
            type: 'object',
            description: 'Channel id ("0", "1", ...) -> channel result with time_series and, as requested, summary and transitions',
            additionalProperties: {
              type: 'object',
              required: ['time_series'],
              properties: {
                time_series: {
                  type: 'array',
                  items: {
                    type: 'object',
                    required: ['timestamp', 'results'],
                    properties: {
                      timestamp: { type: 'number', description: 'Start of the step, ms from the start of the audio' },
                      results: perModel({
                        type: 'object',
                        required: ['result', 'confidence'],
                        properties: { result: label, confidence: { type: 'number', minimum: 0, maximum: 1 } },
                      }),
                      raw: perModel({ type: 'object', description: `Class probabilities (include_raw_values)${v.rawKeys.length ? `; keys: ${[...new Set(v.rawKeys)].sort().join(', ')}` : ''}`, additionalProperties: { type: 'number' } }),
                    },
                  },
                },
                summary: perModel({ type: 'object', description: `Fractions of the steps per class (include_summary)${v.summaryKeys.length ? `; keys: ${[...new Set(v.summaryKeys)].sort().join(', ')}` : ''}`, additionalProperties: { type: 'number' } }),
                transitions: perModel({
                  type: 'array',
                  description: 'Segments of equal result (include_transitions)',
                  items: {
                    type: 'object',
                    required: ['timestamp_start', 'timestamp_end', 'result', 'confidence'],
                    properties: {
                      timestamp_start: { type: 'number' },
                      timestamp_end: { type: 'number' },
                      result: label,
                      confidence: { type: 'number', minimum: 0, maximum: 1 },
                    },
                  },
                }),
              },
            },
          },
        },
      },
    },
  } as const;
}

export const jobIdParamsSchema = {
  type: 'object',
  required: ['jobId'],
  properties: { jobId: { type: 'string', maxLength: 100, description: 'The job_id returned at creation' } },
} as const;

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid parameter or body (INVALID_PARAMETER, UNKNOWN_MODEL, INVALID_BODY)',
  401: 'Missing or invalid x-api-key (MISSING_API_KEY, INVALID_API_KEY)',
  404: 'No such job for this project (JOB_NOT_FOUND)',
  409: 'Results not available (RESULTS_NOT_READY, JOB_FAILED); or the Idempotency-Key was used for another request (IDEMPOTENCY_CONFLICT)',
  413: 'Upload larger than the limit (PAYLOAD_TOO_LARGE)',
  415: 'Unsupported Content-Type (UNSUPPORTED_MEDIA_TYPE)',
  429: 'Rate limit or unfinished-job limit reached (RATE_LIMITED, TOO_MANY_ACTIVE_JOBS); see Retry-After',
  500: 'Internal error (INTERNAL_ERROR)',
  503: 'Not ready or shutting down (SERVICE_UNAVAILABLE)',
};

/** The IETF RateLimit fields on every authenticated answer (docs/api.md "Limits"). */
export const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': { type: 'string', description: 'The per-key policy: `"per-key";q=<burst>;w=<seconds to refill>`', example: '"per-key";q=500;w=10' },
  RateLimit: { type: 'string', description: 'Left now: `"per-key";r=<requests left>;t=<seconds until full>`', example: '"per-key";r=497;t=1' },
} as const;

/** Response entries for the given error statuses, each an application/problem+json Problem. */
export function problemResponses(statuses: number[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of statuses) {
    out[String(s)] = {
      description: STATUS_TEXT[s] ?? 'Error',
      ...(s === 429 || s === 503 || s === 409 ? { headers: { 'Retry-After': { type: 'integer', description: 'Seconds to wait' }, ...(s === 429 ? RATE_LIMIT_HEADERS : {}) } } : {}),
      content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: 'Problem#' } } },
    };
  }
  return out;
}

export { problemSchema };
