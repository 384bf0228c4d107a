/**
 * Job-finished events on a JetStream work-queue stream (message id = event id, so a
 * second publish of the same event within the duplicate window is dropped), consumed by
 * the callback dispatchers of every node through one durable pull consumer: each event
 * goes to one dispatcher, and an event not acked (its dispatcher stopped or died) is
 * delivered again after the ack wait. While a handler runs the message sends heartbeats.
 */
import type { Consumer, JsMsg } from 'nats';
import { deliveryOf, type EventBus, type EventDelivery, type JobFinishedEvent } from '../types';
import { isUnavailable, mapError, type NatsConn, type NatsLogger, sleep, stopOnAbort } from './connection';
import type { Names, NatsSettings } from './settings';

/** Handler slots of one subscription: at most `limit` events in flight; `freed` wakes the pull loop. */
interface Slots {
  limit: number;
  running: Set<Promise<void>>;
  freed: (() => void) | null;
}

export class NatsEventBus implements EventBus {
  private consumer: Consumer | null = null;
  private readonly stops = new Set<() => Promise<void>>();

  constructor(
    private readonly conn: NatsConn,
    private readonly n: Names,
    private readonly s: NatsSettings,
    private readonly log: NatsLogger,
  ) {}

  async publish(event: JobFinishedEvent): Promise<void> {
    await this.conn.call('event publish', () => this.conn.js.publish(this.n.eventsSubject, JSON.stringify(event), { msgID: event.event_id }));
  }

  private async getConsumer(): Promise<Consumer> {
    this.consumer ??= await this.conn.js.consumers.get(this.n.eventsStream, this.n.dispatchersConsumer);
    return this.consumer;
  }

  subscribe(handler: (delivery: EventDelivery) => Promise<void>, opts: { concurrency: number }): { stop(): Promise<void> } {
    const controller = new AbortController();
    const slots: Slots = { limit: Math.max(1, opts.concurrency), running: new Set(), freed: null };
    const loop = this.pullLoop(controller.signal, slots, (m) => this.dispatch(m, handler, slots));
    const stop = async (): Promise<void> => {
      controller.abort();
      await loop;
      await Promise.all([...slots.running]);
      this.stops.delete(stop);
    };
    this.stops.add(stop);
    return { stop };
  }

  /** Pulls at most as many events as there are free handler slots, until stopped. */
  private async pullLoop(signal: AbortSignal, slots: Slots, dispatch: (m: JsMsg) => void): Promise<void> {
    while (!signal.aborted) {
      if (slots.running.size >= slots.limit) {
        await new Promise<void>((r) => {
          slots.freed = r;
          signal.addEventListener('abort', () => r(), { once: true });
        });
        slots.freed = null;
        continue;
      }
      await this.conn.waitConnected(signal);
      if (signal.aborted) break;
      try {
        const consumer = await this.getConsumer();
        const iter = await consumer.fetch({ max_messages: slots.limit - slots.running.size, expires: 5000 });
        const cleanup = stopOnAbort(iter, signal);
        try {
          for await (const m of iter) {
            if (signal.aborted) {
              m.nak();
              continue;
            }
            dispatch(m);
          }
        } finally {
          cleanup();
        }
      } catch (err) {
        if (signal.aborted) break;
        if (!isUnavailable(err)) this.log.warn({ err: (err as Error).message }, 'events: pull failed; retrying');
        await sleep(500, signal);
      }
    }
  }

  /** Runs the handler on one message in a slot, with heartbeats while it runs; an event it did not ack is given back. */
  private dispatch(m: JsMsg, handler: (delivery: EventDelivery) => Promise<void>, slots: Slots): void {
    let event: JobFinishedEvent;
    try {
      event = m.json<JobFinishedEvent>();
    } catch {
      this.log.warn({ seq: m.seq }, 'events: unreadable event dropped');
      m.term();
      return;
    }
    const beat = setInterval(() => {
      if (this.conn.isConnected) m.working();
    }, Math.max(200, Math.floor(this.s.eventsAckWaitMs / 3)));
    beat.unref();
    const { delivery, acked } = deliveryOf(event, async () => {
      try {
        this.conn.check();
        await m.ackAck();
      } catch (err) {
        throw mapError(err, 'event ack');
      }
    });
    const p = handler(delivery)
      .catch((err: unknown) => this.log.warn({ event_id: event.event_id, err: (err as Error).message }, 'events: handler failed; the event is delivered again later'))
      .finally(() => {
        clearInterval(beat);
        // Not handled (the dispatcher is stopping): give it back now rather than after the ack wait.
        if (!acked() && this.conn.isConnected) m.nak();
        slots.running.delete(p);
        slots.freed?.();
      });
    slots.running.add(p);
  }

  async close(): Promise<void> {
    await Promise.all([...this.stops].map((s) => s()));
  }
}
