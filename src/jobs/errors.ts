/**
 * Codes a job can fail with (the `error.code` of a failed job record). Stable: clients
 * may switch on them. docs/api.md lists them with the HTTP problem codes of src/http/errors.ts.
 */
export const JOB_ERROR_CODES = {
  UNSUPPORTED_FORMAT: 'The file is not audio in a supported format (WAV, FLAC, MP3).',
  CORRUPT_AUDIO: 'The audio file is corrupt or truncated.',
  EMPTY_AUDIO: 'The audio file holds no samples.',
  INVALID_CHANNEL: 'The requested channel does not exist in the file.',
  DURATION_LIMIT_EXCEEDED: 'The audio is longer than the duration limit (combined over the processed channels).',
  RESULT_TOO_LARGE: 'The JSON result would exceed the result size limit; raise output_period or split the models over several jobs.',
  DOWNLOAD_FAILED: 'The file URL could not be downloaded.',
  DOWNLOAD_TIMEOUT: 'Downloading the file URL took longer than the download timeout.',
  DOWNLOAD_TOO_LARGE: 'The file at the URL is larger than the download size limit.',
  URL_NOT_ALLOWED: 'The file URL is not allowed.',
  UNKNOWN_MODEL: 'A requested model is not available on this server.',
  INVALID_ARGUMENT: 'A job parameter was rejected by the analysis.',
  MODEL_LOAD_FAILED: 'A model could not be loaded.',
  INFERENCE_FAILED: 'Running a model failed.',
  JOB_INTERRUPTED: 'Processing was interrupted too many times (restarts or crashes).',
  PROCESSING_FAILED: 'Processing failed for an unexpected reason.',
} as const;

export type JobErrorCode = keyof typeof JOB_ERROR_CODES;

/** An error that fails a job with a stable code. */
export class JobFailure extends Error {
  override name = 'JobFailure';
  constructor(
    readonly code: JobErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Maps anything thrown while processing (addon AudioError, AurisError, JobFailure) to a job error. */
export function toJobError(err: unknown): { code: JobErrorCode; message: string } {
  const code = err && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  const message = err instanceof Error ? err.message : String(err);
  if (typeof code === 'string' && code in JOB_ERROR_CODES) {
    return { code: code as JobErrorCode, message: message || JOB_ERROR_CODES[code as JobErrorCode] };
  }
  if (code === 'IO_ERROR') return { code: 'PROCESSING_FAILED', message: `I/O error: ${message}` };
  return { code: 'PROCESSING_FAILED', message: JOB_ERROR_CODES.PROCESSING_FAILED };
}

/** errno codes of storage faults that pass (a full disk, an I/O hiccup, too many open files). */
const TRANSIENT_STORAGE_CODES = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY']);

/**
 * A storage fault that is not the job's doing and may pass: the job is given back for
 * later instead of being failed. Looks through `cause` (wrapped errors).
 */
export function isTransientStorageError(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as Error).name === 'BackendUnavailableError') return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && TRANSIENT_STORAGE_CODES.has(code)) return true;
  }
  return false;
}

/**
 * A verdict on the job itself (its audio, its parameters, its URL): fail it at once. Anything
 * else (an unexpected exception) is retried with backoff before the job fails.
 */
export function isJobVerdict(err: unknown): boolean {
  const code = err && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && (code in JOB_ERROR_CODES || code === 'IO_ERROR');
}

/** What may be said about an unexpected error to the job's owner: its errno code or its class, never its message. */
export function errorKind(err: unknown): string {
  const code = err && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
  return err instanceof Error ? err.name : typeof err;
}
