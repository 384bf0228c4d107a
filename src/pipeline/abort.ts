/** Cancellation of a file analysis: the ABORTED error and promises that give up when the job's signal fires. */
import { AurisError } from '../errors';

/** ABORTED for a cancelled analysis, with the signal's reason. */
export function aborted(signal: AbortSignal | undefined): AurisError {
  const reason = signal?.reason;
  const detail = reason instanceof Error ? reason.message : reason !== undefined ? String(reason) : '';
  return new AurisError('ABORTED', `analysis cancelled${detail ? `: ${detail}` : ''}`);
}

/** Resolves like `p`, or rejects with ABORTED as soon as `signal` fires. */
export function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) {
    p.catch(() => undefined);
    return Promise.reject(aborted(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(aborted(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
