import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { JobQueue, QueueMessage } from '../types';
import { assertSafeName, writeAtomic } from './fsutil';

interface Entry {
  job_id: string;
  seq: number;
  enqueued_at: string;
}

/**
 * Durable FIFO work queue: one file per queued job under <dir>/<jobId>.json, removed on ack.
 * Everything not acked (queued, or in flight when the process stopped or crashed) is
 * delivered again after a restart.
 */
export class EmbeddedJobQueue implements JobQueue {
  private readonly ready: Entry[] = [];
  private readonly inFlight = new Set<string>();
  private readonly deliveries = new Map<string, number>();
  private readonly waiters: Array<() => void> = [];
  private seq = 0;
  private closed = false;

  private constructor(private readonly dir: string) {}

  static async open(dir: string): Promise<EmbeddedJobQueue> {
    await mkdir(dir, { recursive: true });
    const q = new EmbeddedJobQueue(dir);
    const entries: Entry[] = [];
    for (const name of await readdir(dir)) {
      if (name.startsWith('.tmp-')) {
        await rm(join(dir, name), { force: true });
        continue;
      }
      if (!name.endsWith('.json')) continue;
      try {
        entries.push(JSON.parse(await readFile(join(dir, name), 'utf8')) as Entry);
      } catch {
        await rm(join(dir, name), { force: true });
      }
    }
    entries.sort((a, b) => a.enqueued_at.localeCompare(b.enqueued_at) || a.seq - b.seq);
    for (const e of entries) q.ready.push(e);
    q.seq = entries.reduce((m, e) => Math.max(m, e.seq), 0);
    return q;
  }

  private path(jobId: string): string {
    assertSafeName(jobId);
    return join(this.dir, `${jobId}.json`);
  }

  async enqueue(jobId: string): Promise<void> {
    const path = this.path(jobId);
    if (this.inFlight.has(jobId) || this.ready.some((e) => e.job_id === jobId)) return;
    const entry: Entry = { job_id: jobId, seq: ++this.seq, enqueued_at: new Date().toISOString() };
    await writeAtomic(path, JSON.stringify(entry));
    if (this.inFlight.has(jobId) || this.ready.some((e) => e.job_id === jobId)) return;
    this.ready.push(entry);
    this.wake();
  }

  private wake(): void {
    const w = this.waiters.shift();
    if (w) w();
  }

  async pull(signal: AbortSignal): Promise<QueueMessage | null> {
    for (;;) {
      if (this.closed || signal.aborted) return null;
      const entry = this.ready.shift();
      if (entry) return this.deliver(entry);
      await new Promise<void>((resolve) => {
        const done = (): void => {
          signal.removeEventListener('abort', done);
          const i = this.waiters.indexOf(done);
          if (i >= 0) this.waiters.splice(i, 1);
          resolve();
        };
        signal.addEventListener('abort', done, { once: true });
        this.waiters.push(done);
      });
    }
  }

  private deliver(entry: Entry): QueueMessage {
    const jobId = entry.job_id;
    this.inFlight.add(jobId);
    const count = (this.deliveries.get(jobId) ?? 0) + 1;
    this.deliveries.set(jobId, count);
    let settled = false;
    return {
      jobId,
      deliveryCount: count,
      ack: async () => {
        if (settled) return;
        settled = true;
        await rm(this.path(jobId), { force: true });
        this.inFlight.delete(jobId);
        this.deliveries.delete(jobId);
      },
      nak: async () => {
        if (settled) return;
        settled = true;
        this.inFlight.delete(jobId);
        if (!this.closed) {
          this.ready.unshift(entry);
          this.wake();
        }
      },
      working: async () => undefined,
    };
  }

  async pending(): Promise<string[]> {
    return [...this.inFlight, ...this.ready.map((e) => e.job_id)];
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w();
  }
}
