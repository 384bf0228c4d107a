/**
 * Fair scheduling between projects, in front of any JobQueue (embedded or JetStream). Both
 * queues are first-in first-out across tenants: a small job of one project waited behind every
 * long job another project had queued. The worker therefore takes its jobs from a window of
 * up to `window` deliveries pulled ahead from the queue, grouped by project (organization and
 * project of the job's owner), and serves the projects round-robin: each pull returns the
 * oldest held job of the project served least recently (one never served first), so a
 * project's first job runs as soon as the job already running ends.
 *
 * Held deliveries stay owned by this worker (heartbeats keep JetStream from redelivering them);
 * on stop they are given back uncounted. The window bounds what one worker keeps from the
 * others in distributed mode (FAIR_QUEUE_WINDOW, docs/deploy.md).
 */
import type { JobQueue, QueueMessage } from './types';

/** How often held deliveries report that they are still owned (below JetStream's ack wait). */
const HOLD_HEARTBEAT_MS = 5_000;

/** Waits until `register`'s callback is called or `signal` aborts; the abort listener is removed either way. */
function wake(signal: AbortSignal, register: (resolve: () => void) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    register(done);
  });
}

export class FairJobQueue {
  /** Held deliveries per project, in the order the projects arrived. */
  private readonly held = new Map<string, QueueMessage[]>();
  /** When each project was last served (a counter); bounded, cleared when it grows large. */
  private readonly served = new Map<string, number>();
  private serves = 0;
  private count = 0;
  private readonly waiters: Array<() => void> = [];
  private roomWaiter: (() => void) | null = null;
  private filling: Promise<void> | null = null;
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    private readonly queue: JobQueue,
    /** The project a job belongs to ("" when the job is gone: it is served at once and settled by the worker). */
    private readonly projectOf: (jobId: string) => Promise<string>,
    readonly window: number,
  ) {}

  /** The next job, round-robin across projects; null once `signal` aborts or the queue closes. */
  async pull(signal: AbortSignal): Promise<QueueMessage | null> {
    this.filling ??= this.fill(signal);
    this.heartbeat ??= setInterval(() => this.keepHeld(), HOLD_HEARTBEAT_MS);
    this.heartbeat.unref();
    while (this.count === 0) {
      if (signal.aborted || this.filling === null) return null;
      await wake(signal, (resolve) => this.waiters.push(resolve));
    }
    return this.take();
  }

  /** Held deliveries per project (for tests and metrics). */
  heldByProject(): Record<string, number> {
    return Object.fromEntries([...this.held].map(([p, msgs]) => [p, msgs.length]));
  }

  /** Gives every held delivery back to the queue, uncounted (the worker stopped). */
  async release(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    const all = [...this.held.values()].flat();
    this.held.clear();
    this.count = 0;
    await Promise.all(all.map((m) => m.nak({ counted: false }).catch(() => undefined)));
    await this.filling;
    this.filling = null;
  }

  /** Pulls from the queue while the window has room; ends when the queue does. */
  private async fill(signal: AbortSignal): Promise<void> {
    try {
      while (!signal.aborted) {
        if (this.count >= this.window) {
          await wake(signal, (resolve) => (this.roomWaiter = resolve));
          continue;
        }
        const msg = await this.queue.pull(signal);
        if (!msg) break;
        if (signal.aborted) {
          await msg.nak({ counted: false }).catch(() => undefined);
          break;
        }
        this.hold(await this.projectOf(msg.jobId).catch(() => ''), msg);
      }
    } finally {
      this.filling = null;
      for (const w of this.waiters.splice(0)) w();
    }
  }

  private hold(project: string, msg: QueueMessage): void {
    let list = this.held.get(project);
    if (!list) {
      list = [];
      this.held.set(project, list);
    }
    list.push(msg);
    this.count++;
    this.waiters.shift()?.();
  }

  /** The oldest job of the held project served least recently (never served: first, by arrival). */
  private take(): QueueMessage {
    let project = '';
    let oldest = Infinity;
    for (const p of this.held.keys()) {
      const at = this.served.get(p) ?? -1;
      if (at < oldest) [project, oldest] = [p, at];
    }
    const list = this.held.get(project)!;
    const msg = list.shift()!;
    this.count--;
    if (!list.length) this.held.delete(project);
    if (this.served.size > 100_000) this.served.clear();
    this.served.set(project, ++this.serves);
    const room = this.roomWaiter;
    this.roomWaiter = null;
    room?.();
    return msg;
  }

  private keepHeld(): void {
    for (const list of this.held.values()) for (const m of list) void m.working().catch(() => undefined);
  }
}
