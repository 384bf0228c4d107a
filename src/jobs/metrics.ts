import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { JOB_STATUSES, type JobStore } from './types';

export type CallbackOutcome = 'success' | 'client_error' | 'server_error' | 'timeout' | 'network_error';

/** The service's Prometheus metrics, on a registry of its own (several servers may run in one process). */
export class JobMetrics {
  readonly registry = new Registry();
  readonly jobsCreated: Counter;
  readonly jobsFinished: Counter<'status' | 'code'>;
  readonly processingSeconds: Histogram;
  readonly audioSeconds: Counter;
  readonly callbackAttempts: Counter<'outcome'>;
  readonly callbacksDelivered: Counter<'outcome'>;

  constructor(store: () => JobStore | null) {
    collectDefaultMetrics({ register: this.registry, prefix: 'auris_' });
    const registers = [this.registry];
    new Gauge({
      name: 'auris_jobs',
      help: 'Jobs currently stored, by status',
      labelNames: ['status'],
      registers,
      async collect() {
        const s = store();
        const counts = Object.fromEntries(JOB_STATUSES.map((st) => [st, 0])) as Record<string, number>;
        if (s) for (const j of await s.list()) counts[j.record.status] = (counts[j.record.status] ?? 0) + 1;
        for (const st of JOB_STATUSES) this.set({ status: st }, counts[st] ?? 0);
      },
    });
    this.jobsCreated = new Counter({ name: 'auris_jobs_created_total', help: 'Jobs created', registers });
    this.jobsFinished = new Counter({
      name: 'auris_jobs_finished_total',
      help: 'Jobs finished, by final status and error code ("" on success)',
      labelNames: ['status', 'code'],
      registers,
    });
    this.processingSeconds = new Histogram({
      name: 'auris_job_processing_seconds',
      help: 'Wall time from the start of processing to the end of a job',
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers,
    });
    this.audioSeconds = new Counter({
      name: 'auris_audio_seconds_processed_total',
      help: 'Seconds of audio analysed by succeeded jobs (summed over processed channels)',
      registers,
    });
    this.callbackAttempts = new Counter({
      name: 'auris_callback_attempts_total',
      help: 'Callback HTTP attempts, by outcome (success, client_error, server_error, timeout, network_error)',
      labelNames: ['outcome'],
      registers,
    });
    this.callbacksDelivered = new Counter({
      name: 'auris_callbacks_total',
      help: 'Callback notifications, by final outcome (delivered, failed)',
      labelNames: ['outcome'],
      registers,
    });
  }
}
