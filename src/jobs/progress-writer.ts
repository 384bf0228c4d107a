/**
 * A running job's progress and audio facts, written to its record: progress only grows and
 * is written at most once per interval (the latest value when the interval is over); the
 * writes are chained, never concurrent, and best effort (a failed write is not the job's end).
 */
import { mutateJob } from './record';
import type { JobStore, StoredJob } from './types';

const PROGRESS_WRITE_INTERVAL_MS = 500;

export class ProgressWriter {
  private lastWrite = 0;
  private latest = 0;
  private trailing: NodeJS.Timeout | null = null;
  private writing: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly jobs: JobStore,
    private readonly jobId: string,
    /** Stops the trailing write once the run is over. */
    private readonly signal: AbortSignal,
    /** The record vanished while progress was written: the job was deleted. */
    private readonly onGone: () => void,
  ) {}

  /** Records progress p (0..0.99; it only grows), throttled to one write per interval. */
  report(p: number): void {
    this.latest = Math.max(this.latest, Math.min(0.99, Math.max(0, p)));
    const since = Date.now() - this.lastWrite;
    if (since >= PROGRESS_WRITE_INTERVAL_MS) this.writeProgress();
    else if (!this.trailing) {
      // Throttled: write the latest value when the interval is over.
      this.trailing = setTimeout(() => {
        this.trailing = null;
        if (!this.signal.aborted) this.writeProgress();
      }, PROGRESS_WRITE_INTERVAL_MS - since);
    }
  }

  /** Changes the record after the writes queued before (`fn` as in mutateJob). */
  update(fn: (job: StoredJob) => StoredJob | null): void {
    this.chain(() => mutateJob(this.jobs, this.jobId, fn));
  }

  /** Drops the pending trailing write. */
  stop(): void {
    if (this.trailing) clearTimeout(this.trailing);
    this.trailing = null;
  }

  /** Drops the pending trailing write and waits for the queued ones. */
  async flush(): Promise<void> {
    this.stop();
    await this.writing;
  }

  private writeProgress(): void {
    this.lastWrite = Date.now();
    const p = this.latest;
    this.chain(async () => {
      const r = await mutateJob(this.jobs, this.jobId, (j) => {
        if (j.record.status !== 'processing' || j.record.progress >= p) return null;
        j.record.progress = p;
        return j;
      });
      if (!r) this.onGone();
    });
  }

  private chain(write: () => Promise<unknown>): void {
    this.writing = this.writing.then(write).catch(() => undefined);
  }
}
