import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { JobQueue, QueueMessage } from '../types';
import { assertSafeName, readStoredJson, writeAtomic } from './fsutil';

interface Entry {
  job_id: string;
  seq: number;
  enqueued_at: string;
  /** Deliveries given back as failed so far (kept in the file, so the limit holds across restarts). */
  failed_deliveries?: number;
}

/** Deliveries of a job whose processing keeps failing before the worker gives up on it. */
export const DEFAULT_MAX_DELIVERIES = 5;

/** A queue entry is ~100 bytes; anything much larger is not one (and is not read). */
const MAX_ENTRY_BYTES = 64 * 1024;

/** The entry in `path`, or what is wrong with it (then it is set aside). */
async function readEntry(path: string, expectedId: string): Promise<Entry | string> {
  let v: unknown;
  try {
    v = await readStoredJson(path, MAX_ENTRY_BYTES);
  } catch (err) {
    return `unreadable: ${(err as Error).message}`;
  }
  const e = v as Partial<Entry> | null;
  if (!e || typeof e !== 'object') return 'not an object';
  if (e.job_id !== expectedId) return 'job_id does not match the file name';
  try {
    assertSafeName(e.job_id);
  } catch {
    return 'job_id is not a usable name';
  }
  if (typeof e.seq !== 'number' || !Number.isFinite(e.seq)) return 'seq is not a number';
  if (typeof e.enqueued_at !== 'string') return 'enqueued_at is not a string';
  const failed = e.failed_deliveries ?? 0;
  if (!Number.isInteger(failed) || failed < 0) return 'failed_deliveries is not a count';
  return { job_id: e.job_id, seq: e.seq, enqueued_at: e.enqueued_at, failed_deliveries: failed };
}

/**
 * Durable FIFO work queue: one file per queued job under <dir>/<jobId>.json, removed on ack.
 * Everything not acked (queued, or in flight when the process stopped or crashed) is
 * delivered again after a restart. A nak may ask for a delay (the worker's backoff); a
 * malformed entry found at start is set aside as <id>.json.corrupt.
 */
export class EmbeddedJobQueue implements JobQueue {
  private readonly ready: Entry[] = [];
  private readonly inFlight = new Set<string>();
  private readonly waiters: Array<() => void> = [];
  /** Given back with a delay: the timer that makes them ready again. */
  private readonly delayed = new Map<string, NodeJS.Timeout>();
  private seq = 0;
  private closed = false;

  private constructor(
    private readonly dir: string,
    readonly maxDeliveries: number,
  ) {}

  static async open(dir: string, opts: { maxDeliveries?: number; log?: (msg: string) => void } = {}): Promise<EmbeddedJobQueue> {
    await mkdir(dir, { recursive: true });
    const q = new EmbeddedJobQueue(dir, opts.maxDeliveries ?? DEFAULT_MAX_DELIVERIES);
    const entries: Entry[] = [];
    for (const name of await readdir(dir)) {
      if (name.startsWith('.tmp-')) {
        await rm(join(dir, name), { force: true });
        continue;
      }
      if (!name.endsWith('.json')) continue;
      const entry = await readEntry(join(dir, name), name.slice(0, -'.json'.length));
      if (typeof entry === 'string') {
        // Set aside, not deleted: the job itself is re-enqueued by the start-up recovery (its record is not finished).
        opts.log?.(`job queue: malformed entry ${name} moved aside (${entry})`);
        await rename(join(dir, name), join(dir, `${name}.corrupt`)).catch(() => undefined);
        continue;
      }
      entries.push(entry);
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
    if (this.holds(jobId)) return;
    const entry: Entry = { job_id: jobId, seq: ++this.seq, enqueued_at: new Date().toISOString() };
    await writeAtomic(path, JSON.stringify(entry));
    if (this.holds(jobId)) return;
    this.ready.push(entry);
    this.wake();
  }

  private holds(jobId: string): boolean {
    return this.inFlight.has(jobId) || this.delayed.has(jobId) || this.ready.some((e) => e.job_id === jobId);
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
    const count = (entry.failed_deliveries ?? 0) + 1;
    let settled = false;
    return {
      jobId,
      deliveryCount: count,
      ack: async () => {
        if (settled) return;
        settled = true;
        await rm(this.path(jobId), { force: true });
        this.inFlight.delete(jobId);
      },
      nak: async (opts = {}) => {
        if (settled) return;
        settled = true;
        if (opts.counted !== false) {
          entry.failed_deliveries = count;
          // Best effort (the disk may be the problem): at worst a restart forgets this delivery.
          await writeAtomic(this.path(jobId), JSON.stringify(entry)).catch(() => undefined);
        }
        this.inFlight.delete(jobId);
        if (this.closed) return;
        const delayMs = opts.delayMs ?? 0;
        if (delayMs <= 0) {
          this.ready.unshift(entry);
          this.wake();
          return;
        }
        const timer = setTimeout(() => {
          this.delayed.delete(jobId);
          if (this.closed) return;
          this.ready.push(entry);
          this.wake();
        }, delayMs);
        timer.unref();
        this.delayed.set(jobId, timer);
      },
      working: async () => undefined,
    };
  }

  async pending(): Promise<string[]> {
    return [...this.inFlight, ...this.delayed.keys(), ...this.ready.map((e) => e.job_id)];
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.delayed.values()) clearTimeout(t);
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) w();
  }
}
