import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { deliveryOf, type EventBus, type EventDelivery, type JobFinishedEvent } from '../types';
import { assertSafeName, readStoredJson, writeAtomic } from './fsutil';

/**
 * Durable event log: one file per unacked event under <dir>/<eventId>.json. Events not
 * acked before a stop or crash are handed to the subscriber again after a restart.
 */
export class EmbeddedEventBus implements EventBus {
  private readonly pending = new Map<string, JobFinishedEvent>();
  private readonly inFlight = new Set<string>();
  private handler: ((d: EventDelivery) => Promise<void>) | null = null;
  private concurrency = 1;
  private closed = false;

  private constructor(private readonly dir: string) {}

  static async open(dir: string): Promise<EmbeddedEventBus> {
    await mkdir(dir, { recursive: true });
    const bus = new EmbeddedEventBus(dir);
    const events: JobFinishedEvent[] = [];
    for (const name of await readdir(dir)) {
      if (!name.endsWith('.json') || name.startsWith('.tmp-')) {
        if (name.startsWith('.tmp-')) await rm(join(dir, name), { force: true });
        continue;
      }
      try {
        events.push((await readStoredJson(join(dir, name))) as JobFinishedEvent);
      } catch {
        await rm(join(dir, name), { force: true });
      }
    }
    events.sort((a, b) => a.occurred_at.localeCompare(b.occurred_at));
    for (const e of events) bus.pending.set(e.event_id, e);
    return bus;
  }

  private path(id: string): string {
    assertSafeName(id);
    return join(this.dir, `${id}.json`);
  }

  async publish(event: JobFinishedEvent): Promise<void> {
    if (this.pending.has(event.event_id)) return;
    await writeAtomic(this.path(event.event_id), JSON.stringify(event));
    this.pending.set(event.event_id, event);
    this.pump();
  }

  subscribe(handler: (delivery: EventDelivery) => Promise<void>, opts: { concurrency: number }): { stop(): Promise<void> } {
    if (this.handler) throw new Error('embedded event bus: one subscriber only');
    this.handler = handler;
    this.concurrency = Math.max(1, opts.concurrency);
    this.pump();
    return {
      stop: async () => {
        this.handler = null;
      },
    };
  }

  private pump(): void {
    const handler = this.handler;
    if (!handler || this.closed) return;
    for (const [id, event] of this.pending) {
      if (this.inFlight.size >= this.concurrency) return;
      if (this.inFlight.has(id)) continue;
      this.inFlight.add(id);
      const { delivery } = deliveryOf(event, async () => {
        this.pending.delete(id);
        await rm(this.path(id), { force: true });
      });
      void handler(delivery)
        .catch(() => undefined)
        .finally(() => {
          this.inFlight.delete(id);
          this.pump();
        });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.handler = null;
  }
}
