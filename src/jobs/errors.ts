/**
 * How an error ends a job: the job-failure rendering of the catalogue (src/errors.ts, its
 * `job` column) and the storage faults that give a job back instead (STORAGE_ERRNOS).
 * The failure record (`error.code`, `error.message`) is what GET /jobs/{id} and the
 * job-finished callback carry.
 */
import { ERRORS, errorCode, errorSpec, type JobErrorCode, STORAGE_ERRNOS, storageErrno } from '../errors';

/** Maps anything thrown while processing (AurisError, the addon's AudioError, ...) to a job error. */
export function toJobError(err: unknown): { code: JobErrorCode; message: string } {
  const code = errorCode(err);
  const message = err instanceof Error ? err.message : String(err);
  const job = errorSpec(code)?.job;
  if (job === 'fails') return { code: code as JobErrorCode, message: message || ERRORS[code as JobErrorCode].message };
  if (job !== undefined) return { code: job, message: `${errorSpec(code)!.message}: ${message}` };
  return { code: 'PROCESSING_FAILED', message: ERRORS.PROCESSING_FAILED.message };
}

/**
 * A storage fault that is not the job's doing and may pass: the job is given back for
 * later instead of being failed. Looks through `cause` (wrapped errors).
 */
export function isTransientStorageError(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as Error).name === 'BackendUnavailableError') return true;
    const errno = storageErrno(e);
    if (errno !== undefined && STORAGE_ERRNOS[errno]!.passes) return true;
  }
  return false;
}

/**
 * A verdict on the job itself (its audio, its parameters, its URL): fail it at once. Anything
 * else (an unexpected exception) is retried with backoff before the job fails.
 */
export function isJobVerdict(err: unknown): boolean {
  return errorSpec(errorCode(err))?.job !== undefined;
}

/** What may be said about an unexpected error to the job's owner: its errno code or its class, never its message. */
export function errorKind(err: unknown): string {
  const code = errorCode(err);
  if (code !== undefined && /^E[A-Z]+$/.test(code)) return code;
  return err instanceof Error ? err.name : typeof err;
}
