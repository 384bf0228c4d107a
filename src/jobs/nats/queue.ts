/**
 * The job queue on a JetStream work-queue stream: one message per job on subject
 * <prefix>.jobs.<jobId> (message id = job id, so enqueueing twice within the duplicate
 * window stores one message), consumed by workers through one durable pull consumer with
 * explicit acks. A delivered job stays in the stream until acked; if its worker stops
 * sending heartbeats for the ack wait (it died), JetStream delivers it again, with
 * backoff, up to max_deliver times (then the exhausted-jobs handler marks it failed).
 * While a worker holds a message, the message sends `working()` heartbeats on its own.
 */
import { randomBytes } from 'node:crypto';
import type { Consumer, JsMsg } from 'nats';
import { BackendUnavailableError, type JobQueue, type QueueMessage } from '../types';
import { isUnavailable, mapError, type NatsConn, type NatsLogger, sleep, stopOnAbort } from './connection';
import type { Names, NatsSettings } from './settings';

export interface QueueOptions {
  /** How long one pull request waits on the server for a job, ms. */
  pullExpiresMs?: number;
}

export class NatsJobQueue implements JobQueue {
  private consumer: Consumer | null = null;
  private readonly closeController = new AbortController();
  /** Messages handed to the worker and not settled yet, with their settle function. */
  private readonly held = new Map<JsMsg, () => boolean>();
  private readonly pullExpiresMs: number;
  readonly maxDeliveries: number;

  constructor(
    private readonly conn: NatsConn,
    private readonly n: Names,
    private readonly s: NatsSettings,
    private readonly log: NatsLogger,
    opts: QueueOptions = {},
  ) {
    this.pullExpiresMs = Math.max(1000, opts.pullExpiresMs ?? 10_000);
    this.maxDeliveries = s.maxDeliver;
  }

  private subject(jobId: string): string {
    if (!/^[A-Za-z0-9_-]+$/.test(jobId)) throw new Error(`job id not usable as a subject token: ${JSON.stringify(jobId)}`);
    return this.n.jobsSubjectPrefix + jobId;
  }

  async enqueue(jobId: string): Promise<void> {
    const subject = this.subject(jobId);
    await this.conn.call('enqueue', async () => {
      const ack = await this.conn.js.publish(subject, jobId, { msgID: jobId });
      if (!ack.duplicate) return;
      // A duplicate of a message published within the window: fine while it is still
      // queued or in flight; if it was acked meanwhile, publish it again for real.
      if (await this.holds(subject)) return;
      await this.conn.js.publish(subject, jobId, { msgID: `${jobId}.${randomBytes(4).toString('hex')}` });
    });
  }

  private async holds(subject: string): Promise<boolean> {
    try {
      await this.conn.jsm.streams.getMessage(this.n.jobsStream, { last_by_subj: subject });
      return true;
    } catch (err) {
      if (isUnavailable(err)) throw err;
      return false; // 10037: no message found
    }
  }

  private async getConsumer(): Promise<Consumer> {
    this.consumer ??= await this.conn.js.consumers.get(this.n.jobsStream, this.n.workersConsumer);
    return this.consumer;
  }

  async pull(signal: AbortSignal): Promise<QueueMessage | null> {
    const stop = AbortSignal.any([signal, this.closeController.signal]);
    while (!stop.aborted) {
      await this.conn.waitConnected(stop);
      if (stop.aborted) break;
      let msg: JsMsg | null = null;
      try {
        const consumer = await this.getConsumer();
        const iter = await consumer.fetch({ max_messages: 1, expires: this.pullExpiresMs });
        const cleanup = stopOnAbort(iter, stop);
        try {
          for await (const m of iter) {
            msg = m;
            break;
          }
        } finally {
          cleanup();
        }
      } catch (err) {
        if (stop.aborted) break;
        if (!isUnavailable(err)) this.log.warn({ err: (err as Error).message }, 'queue: pull failed; retrying');
        await sleep(500, stop);
        continue;
      }
      if (!msg) continue; // the pull request expired
      if (stop.aborted) {
        msg.nak();
        break;
      }
      return this.wrap(msg);
    }
    return null;
  }

  private wrap(m: JsMsg): QueueMessage {
    const jobId = m.subject.slice(this.n.jobsSubjectPrefix.length);
    // Heartbeats while the job is held, well inside the ack wait.
    const every = Math.max(200, Math.floor(this.s.ackWaitMs / 3));
    const beat = setInterval(() => {
      if (this.conn.isConnected) m.working();
    }, every);
    beat.unref();
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearInterval(beat);
      this.held.delete(m);
      return true;
    };
    this.held.set(m, settle);
    const deliveryCount = m.info.redeliveryCount;
    return {
      jobId,
      deliveryCount,
      ack: async () => {
        if (!settle()) return;
        try {
          this.conn.check();
          await m.ackAck();
        } catch (err) {
          // Not acked: JetStream delivers the job again after the ack wait; the worker
          // then finds it finished and only acks.
          throw mapError(err, 'ack');
        }
      },
      nak: async (opts = {}) => {
        if (!settle()) return;
        if (!this.conn.isConnected) return; // redelivered after the ack wait anyway
        // The worker's backoff; JetStream counts this delivery towards max_deliver whatever `counted` says.
        m.nak(opts.delayMs && opts.delayMs > 0 ? opts.delayMs : undefined);
      },
      working: async () => {
        if (settled) return;
        if (!this.conn.isConnected) throw new BackendUnavailableError('NATS is unreachable');
        m.working();
      },
    };
  }

  /** Job ids queued or in flight (every message still in the work-queue stream). */
  async pending(): Promise<string[]> {
    return this.conn.call('queue pending', async () => {
      const info = await this.conn.jsm.streams.info(this.n.jobsStream, { subjects_filter: `${this.n.jobsSubjectPrefix}>` });
      return Object.keys(info.state.subjects ?? {}).map((s) => s.slice(this.n.jobsSubjectPrefix.length));
    });
  }

  /** Stops pulling; jobs still held are given back. */
  async close(): Promise<void> {
    this.closeController.abort();
    for (const [m, settle] of [...this.held]) {
      if (settle() && this.conn.isConnected) m.nak();
    }
  }
}
