/**
 * Retention: finished jobs are purged (record, results, any leftover upload) once their
 * expires_at has passed. At start-up, blobs that belong to no job are removed too.
 */
import type { JobService } from './service';
import { isTerminal, type Backends } from './types';

export class RetentionSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly backends: Backends,
    private readonly service: JobService,
    private readonly intervalMs: number,
    private readonly log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void },
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sweep(), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Purges expired jobs; returns how many. */
  sweep(now = Date.now()): Promise<void> {
    if (this.running) return this.running;
    this.running = (async () => {
      try {
        let purged = 0;
        for (const job of await this.backends.jobs.list()) {
          const exp = job.record.expires_at;
          if (isTerminal(job.record.status) && exp && Date.parse(exp) <= now) {
            await this.service.purge(job);
            purged++;
          }
        }
        if (purged) this.log.info({ purged }, 'retention: purged expired jobs');
      } catch (err) {
        this.log.warn({ err }, 'retention sweep failed');
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  /** Removes blobs no job refers to (call before accepting requests). */
  async removeOrphans(): Promise<number> {
    const live = new Set<string>();
    for (const j of await this.backends.jobs.list()) {
      if (j.upload_blob) live.add(j.upload_blob);
      if (j.results_blob) live.add(j.results_blob);
    }
    let removed = 0;
    for (const key of await this.backends.blobs.keys()) {
      if (!live.has(key)) {
        await this.backends.blobs.delete(key);
        removed++;
      }
    }
    return removed;
  }
}
