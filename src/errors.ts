/**
 * The one error catalogue of auris: one row per stable error code. This is the one place to add
 * a code; every transport renders from it:
 *
 *   message  the default human message (a REST answer's problem `title`, unless `title` is set)
 *   http     the status of a REST problem+json answer with this code (src/http/errors.ts)
 *   grpc     the status a gRPC stream ends with (src/grpc/server.ts); none: INTERNAL. A stream
 *            error whose status is INTERNAL is the server's fault on both stream transports:
 *            logged, and its message prefixed "internal error: " (src/streaming/live-stream.ts)
 *   ws       the WebSocket close code after the error message (src/websocket); none: 4500
 *   job      what a job does when this error reaches the worker (src/jobs/errors.ts): 'fails' (a
 *            verdict on the job: it fails at once with this code, also in its callback), another
 *            code (it fails at once under that code), none (not the job's fault: delivered again
 *            with backoff, then PROCESSING_FAILED)
 *
 * The native addon's codes (native/errors.h codeName) are NATIVE_CODES; test/errors checks that
 * they agree, that docs/errors.md lists this table, and that every code src/ raises is a row.
 * Codes are stable (clients switch on them); messages are for humans and may change.
 */
import type { status as GrpcStatus } from '@grpc/grpc-js';
import { SUPPORTED_FORMATS_TEXT } from './audio/formats';

export type GrpcStatusName = keyof typeof GrpcStatus;

export interface ErrorSpec {
  readonly message: string;
  /** The problem title when it differs from `message` (a code that is a REST answer and a job failure). */
  readonly title?: string;
  readonly http?: number;
  readonly grpc?: GrpcStatusName;
  readonly ws?: number;
  readonly job?: 'fails' | 'PROCESSING_FAILED';
}

export const ERRORS = {
  // REST answers (problem+json), in the order of the OpenAPI enum
  INVALID_PARAMETER: { message: 'Invalid parameter', http: 400, ws: 4400 },
  UNKNOWN_MODEL: { message: 'A requested model is not available on this server.', title: 'Unknown model', http: 400, grpc: 'INVALID_ARGUMENT', ws: 4400, job: 'fails' },
  INVALID_BODY: { message: 'Invalid request body', http: 400 },
  MALFORMED_REQUEST: { message: 'Malformed HTTP request', http: 400 },
  MISSING_API_KEY: { message: 'Missing API key', http: 401, grpc: 'UNAUTHENTICATED', ws: 4401 },
  INVALID_API_KEY: { message: 'Invalid API key', http: 401, grpc: 'UNAUTHENTICATED', ws: 4401 },
  JOB_NOT_FOUND: { message: 'Job not found', http: 404 },
  NOT_FOUND: { message: 'Not found', http: 404 },
  METHOD_NOT_ALLOWED: { message: 'Method not allowed', http: 405 },
  REQUEST_TIMEOUT: { message: 'Request timeout', http: 408 },
  RESULTS_NOT_READY: { message: 'Results not ready', http: 409 },
  JOB_FAILED: { message: 'Job failed', http: 409 },
  IDEMPOTENCY_CONFLICT: { message: 'Idempotency-Key reused for another request', http: 409 },
  PAYLOAD_TOO_LARGE: { message: 'Payload too large', http: 413 },
  UNSUPPORTED_MEDIA_TYPE: { message: 'Unsupported media type', http: 415 },
  RATE_LIMITED: { message: 'Too many requests', http: 429 },
  TOO_MANY_AUTH_FAILURES: { message: 'Too many failed authentications', http: 429, grpc: 'RESOURCE_EXHAUSTED', ws: 4429 },
  TOO_MANY_ACTIVE_JOBS: { message: 'Too many unfinished jobs', http: 429 },
  EXPECTATION_FAILED: { message: 'Expectation failed', http: 417 },
  HEADERS_TOO_LARGE: { message: 'Request header fields too large', http: 431 },
  INTERNAL_ERROR: { message: 'Internal error', http: 500 },
  SERVICE_UNAVAILABLE: { message: 'Service unavailable', http: 503 },

  // Job failures (`error.code` of a failed job); the audio ones also end a live stream
  UNSUPPORTED_FORMAT: { message: `The file is not audio in a supported format (${SUPPORTED_FORMATS_TEXT}).`, grpc: 'INVALID_ARGUMENT', job: 'fails' },
  CORRUPT_AUDIO: { message: 'The audio file is corrupt or truncated.', grpc: 'INVALID_ARGUMENT', job: 'fails' },
  EMPTY_AUDIO: { message: 'The audio file holds no samples.', grpc: 'INVALID_ARGUMENT', ws: 4400, job: 'fails' },
  INVALID_CHANNEL: { message: 'The requested channel does not exist in the file.', grpc: 'INVALID_ARGUMENT', ws: 4400, job: 'fails' },
  DURATION_LIMIT_EXCEEDED: { message: 'The audio is longer than the duration limit (combined over the processed channels).', grpc: 'RESOURCE_EXHAUSTED', job: 'fails' },
  RESULT_TOO_LARGE: { message: 'The JSON result would exceed the result size limit; raise output_period or split the models over several jobs.', job: 'fails' },
  DOWNLOAD_FAILED: { message: 'The file URL could not be downloaded.', job: 'fails' },
  DOWNLOAD_TIMEOUT: { message: 'Downloading the file URL took longer than the download timeout.', job: 'fails' },
  DOWNLOAD_TOO_LARGE: { message: 'The file at the URL is larger than the download size limit.', job: 'fails' },
  URL_NOT_ALLOWED: { message: 'The file URL is not allowed.', job: 'fails' },
  INVALID_ARGUMENT: { message: 'A job parameter was rejected by the analysis.', grpc: 'INVALID_ARGUMENT', ws: 4400, job: 'fails' },
  MODEL_LOAD_FAILED: { message: 'A model could not be loaded.', job: 'fails' },
  INFERENCE_FAILED: { message: 'Running a model failed.', job: 'fails' },
  JOB_INTERRUPTED: { message: 'Processing was interrupted too many times (restarts or crashes).', job: 'fails' },
  PROCESSING_FAILED: { message: 'Processing failed for an unexpected reason.', job: 'fails' },

  // Raised inside the service, never a code of their own on a job
  IO_ERROR: { message: 'I/O error', job: 'PROCESSING_FAILED' },
  ABORTED: { message: 'The operation was cancelled.', grpc: 'CANCELLED' },
  CLOSED: { message: 'A component was used after close().', grpc: 'UNAVAILABLE' },

  // Live streams (gRPC and WebSocket)
  INVALID_MESSAGE: { message: 'A WebSocket text frame other than {"type":"end"}.', grpc: 'INVALID_ARGUMENT', ws: 4400 },
  INVALID_STREAM_TOKEN: { message: 'The stream token is unknown, expired or already used.', ws: 4401 },
  IDLE_TIMEOUT: { message: 'No stream config or no audio in time.', grpc: 'DEADLINE_EXCEEDED', ws: 4408 },
  RESOURCE_EXHAUSTED: { message: 'The client does not read its results.', grpc: 'RESOURCE_EXHAUSTED', ws: 4413 },
  TOO_MANY_STREAMS: { message: 'Too many concurrent streams (the server or the API key).', grpc: 'RESOURCE_EXHAUSTED', ws: 4429 },
  UNAVAILABLE: { message: 'The server is shutting down, or a store it needs (distributed mode: NATS) does not answer.', grpc: 'UNAVAILABLE', ws: 4503 },
  INTERNAL: { message: 'Internal error', grpc: 'INTERNAL', ws: 4500 },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

type CodesWith<P> = { [K in ErrorCode]: (typeof ERRORS)[K] extends P ? K : never }[ErrorCode];
/** Codes a REST request is answered with. */
export type HttpErrorCode = CodesWith<{ http: number }>;
/** Codes a job fails with (the `error.code` of a failed job record). */
export type JobErrorCode = CodesWith<{ job: 'fails' }>;

/** The codes the native addon raises, mirroring codeName() of native/errors.h (test/errors checks it). */
export const NATIVE_CODES = [
  'UNSUPPORTED_FORMAT',
  'CORRUPT_AUDIO',
  'EMPTY_AUDIO',
  'INVALID_CHANNEL',
  'DURATION_LIMIT_EXCEEDED',
  'INVALID_ARGUMENT',
  'IO_ERROR',
] as const satisfies readonly ErrorCode[];

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERRORS, code);
}

/** The row of a code; undefined for a code that is not in the catalogue. */
export function errorSpec(code: unknown): ErrorSpec | undefined {
  return isErrorCode(code) ? ERRORS[code] : undefined;
}

/** Every code whose row matches, in catalogue order. */
export function codesWhere(match: (spec: ErrorSpec) => boolean): ErrorCode[] {
  return (Object.keys(ERRORS) as ErrorCode[]).filter((c) => match(ERRORS[c]));
}

/** The codes REST answers with, in catalogue order (the OpenAPI Problem enum). */
export const HTTP_ERROR_CODES = codesWhere((s) => s.http !== undefined) as HttpErrorCode[];
/** The codes a job fails with, in catalogue order (the OpenAPI Job error enum). */
export const JOB_ERROR_CODES = codesWhere((s) => s.job === 'fails') as JobErrorCode[];

/** The gRPC status name a stream ends with for `code` (INTERNAL for a code without one, or none). */
export function grpcStatusName(code: string | undefined): GrpcStatusName {
  return errorSpec(code)?.grpc ?? 'INTERNAL';
}

/** The WebSocket close code after an error with `code` (INTERNAL's for a code without one). */
export function wsCloseCode(code: string | undefined): number {
  return errorSpec(code)?.ws ?? ERRORS.INTERNAL.ws;
}

/** A stream error that is the server's fault (gRPC INTERNAL): logged, and not explained to the client. */
export function isServerFault(code: string | undefined): boolean {
  return grpcStatusName(code) === 'INTERNAL';
}

/**
 * The one error class with a stable `code` (like better-sqlite3's): raised by every layer
 * (the addon's AudioError and the REST ApiError are subclasses). `details` are extra
 * machine-readable facts (e.g. the list of valid models).
 */
export class AurisError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AurisError';
    this.code = code;
    if (details !== undefined) this.details = details;
  }
}

/** The string `code` of any error object that carries one (AurisError, the addon's errors, Node system errors). */
export function errorCode(err: unknown): string | undefined {
  if (err && typeof err === 'object' && typeof (err as { code?: unknown }).code === 'string') {
    return (err as { code: string }).code;
  }
  return undefined;
}

/**
 * errno codes of storage faults (the data directory or the job store, never the request's or the
 * job's doing): REST answers 503 SERVICE_UNAVAILABLE with Retry-After (src/http), and a job is
 * given back without counting its attempt when the fault `passes` by itself (src/jobs); one that
 * needs an operator (a read-only or unreadable data directory) is retried with backoff instead.
 */
export const STORAGE_ERRNOS: Readonly<Record<string, { passes: boolean }>> = {
  ENOSPC: { passes: true }, // the disk is full
  EDQUOT: { passes: true }, // the disk quota is used up
  EIO: { passes: true }, // an I/O error
  EMFILE: { passes: true }, // too many open files (process)
  ENFILE: { passes: true }, // too many open files (system)
  EAGAIN: { passes: true },
  EBUSY: { passes: true },
  EROFS: { passes: false }, // a read-only file system
  EACCES: { passes: false },
  EPERM: { passes: false },
  ENOTDIR: { passes: false },
};

/** The storage errno of an error (see STORAGE_ERRNOS), or undefined. */
export function storageErrno(err: unknown): string | undefined {
  const code = errorCode(err);
  return code !== undefined && Object.hasOwn(STORAGE_ERRNOS, code) ? code : undefined;
}
