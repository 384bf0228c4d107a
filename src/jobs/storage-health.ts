/**
 * Whether the job store can be written, as the worker last found it. A probe write of a few
 * bytes (src/http/routes/operations.ts) still succeeds on a disk that is nearly full while a
 * job's results do not fit: so readiness also reports a storage fault that a job met and that
 * no later job has cleared (jobs wait for it: the worker retries them with backoff), and the
 * API tells the owner of a queued job why it waits (docs/reliability.md). A request that meets
 * a fault is answered 503 with Retry-After and leaves readiness to the probe: with no job
 * waiting, nothing would clear it once space returns.
 */
import { errorCode, storageErrno } from '../errors';

export class StorageHealth {
  private fault: { errno: string; since: string } | null = null;

  /** A job's write failed with a storage fault (a storage errno, or NATS unreachable). */
  failed(err: unknown): void {
    const errno = storageErrno(err) ?? errorCode(err) ?? 'UNAVAILABLE';
    if (this.fault?.errno !== errno) this.fault = { errno, since: new Date().toISOString() };
  }

  /** A job was run through: the store takes writes again. */
  succeeded(): void {
    this.fault = null;
  }

  /** The fault that no write has cleared yet, else null. */
  get current(): { errno: string; since: string } | null {
    return this.fault;
  }
}

/** The warning code a queued job shows while the job store cannot be written. */
export const WAITING_FOR_STORAGE = 'WAITING_FOR_STORAGE';

/**
 * A queued job's record as the API shows it while storage is failing: a warning says why it
 * waits. Not stored (the store is what fails); gone once a write succeeds.
 */
export function withWaitReason<R extends { status: string; warnings: Array<{ code: string; message: string }> }>(record: R, fault: StorageHealth['current']): R {
  if (!fault || record.status !== 'queued') return record;
  const message = `The job waits: the job store cannot be written (${fault.errno}) since ${fault.since}; it runs once storage takes writes again.`;
  return { ...record, warnings: [...(record.warnings ?? []), { code: WAITING_FOR_STORAGE, message }] };
}
