/**
 * Jobs that ran out of deliveries. When a job message has been delivered max_deliver times
 * and the last delivery was not acked either, JetStream stops delivering it and publishes a
 * max-deliveries advisory; a stream captures those advisories durably, and this handler
 * (running on every node, one durable consumer) marks each such job failed with
 * JOB_INTERRUPTED, publishes its job-finished event and removes its message from the work
 * queue. So a job is never silently dropped.
 */
import { randomUUID } from 'node:crypto';
import type { Consumer, JsMsg } from 'nats';
import { mutateJob } from '../record';
import { type Backends, isTerminal, type JobFinishedEvent } from '../types';
import { apiErrorCode, isUnavailable, type NatsConn, type NatsLogger, sleep, stopOnAbort } from './connection';
import type { Names } from './settings';

const NO_MESSAGE_FOUND = 10037;

interface MaxDeliveriesAdvisory {
  type: string;
  stream: string;
  consumer: string;
  stream_seq: number;
  deliveries: number;
}

export class ExhaustedJobHandler {
  private readonly controller = new AbortController();
  private loop: Promise<void> | null = null;
  private consumer: Consumer | null = null;

  constructor(
    private readonly conn: NatsConn,
    private readonly n: Names,
    private readonly backends: Omit<Backends, 'close'>,
    private readonly retentionSec: number,
    private readonly log: NatsLogger,
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  private async run(): Promise<void> {
    const signal = this.controller.signal;
    while (!signal.aborted) {
      await this.conn.waitConnected(signal);
      if (signal.aborted) break;
      try {
        this.consumer ??= await this.conn.js.consumers.get(this.n.deadStream, this.n.deadConsumer);
        const iter = await this.consumer.fetch({ max_messages: 10, expires: 10_000 });
        const cleanup = stopOnAbort(iter, signal);
        try {
          for await (const m of iter) await this.handle(m);
        } finally {
          cleanup();
        }
      } catch (err) {
        if (signal.aborted) break;
        if (!isUnavailable(err)) this.log.warn({ err: (err as Error).message }, 'exhausted jobs: pull failed; retrying');
        await sleep(1000, signal);
      }
    }
  }

  private async handle(m: JsMsg): Promise<void> {
    let adv: MaxDeliveriesAdvisory;
    try {
      adv = m.json<MaxDeliveriesAdvisory>();
    } catch {
      m.term();
      return;
    }
    try {
      let subject: string | null = null;
      try {
        subject = (await this.conn.jsm.streams.getMessage(this.n.jobsStream, { seq: adv.stream_seq })).subject;
      } catch (err) {
        if (apiErrorCode(err) !== NO_MESSAGE_FOUND) throw err;
      }
      if (subject?.startsWith(this.n.jobsSubjectPrefix)) {
        const jobId = subject.slice(this.n.jobsSubjectPrefix.length);
        await this.failJob(jobId, adv.deliveries);
        await this.conn.jsm.streams.deleteMessage(this.n.jobsStream, adv.stream_seq, false).catch((err: unknown) => {
          if (apiErrorCode(err) !== NO_MESSAGE_FOUND) throw err;
        });
      }
      await m.ackAck();
    } catch (err) {
      this.log.warn({ err: (err as Error).message, stream_seq: adv.stream_seq }, 'exhausted jobs: handling failed; retrying later');
      if (this.conn.isConnected) m.nak(5000);
    }
  }

  /** The same final transition as the worker's, with JOB_INTERRUPTED. */
  async failJob(jobId: string, deliveries: number): Promise<void> {
    const { jobs, blobs, events } = this.backends;
    const now = new Date();
    const updated = await mutateJob(jobs, jobId, (j) => {
      if (isTerminal(j.record.status)) return null;
      j.record.status = 'failed';
      j.record.finished_at = now.toISOString();
      j.record.expires_at = new Date(now.getTime() + this.retentionSec * 1000).toISOString();
      j.record.error = {
        code: 'JOB_INTERRUPTED',
        message: `The job was handed to workers ${deliveries} times without finishing (workers crashed, stopped or lost their connection).`,
      };
      j.event_id = randomUUID();
      return j;
    });
    if (!updated || !isTerminal(updated.value.record.status) || !updated.value.event_id) return;
    // Also when the job was already finished (by a worker, or by an earlier try of this
    // handler that failed half-way): the upload goes, and the event is published again
    // (deduplicated by its id).
    const job = updated.value;
    if (job.record.error?.code === 'JOB_INTERRUPTED') this.log.warn({ job_id: jobId, deliveries }, 'job ran out of deliveries: failed (JOB_INTERRUPTED)');
    if (job.upload_blob) {
      await blobs.delete(job.upload_blob);
      await mutateJob(jobs, jobId, (j) => {
        j.upload_blob = null;
        return j;
      }).catch(() => undefined);
    }
    const event: JobFinishedEvent = {
      type: 'job.finished',
      event_id: job.event_id!,
      job_id: jobId,
      occurred_at: job.record.finished_at ?? now.toISOString(),
      record: job.record,
      callback: job.record.request.callback,
    };
    await events.publish(event);
  }

  async stop(): Promise<void> {
    this.controller.abort();
    await this.loop;
  }
}
