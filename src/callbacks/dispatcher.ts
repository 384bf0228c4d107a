/**
 * Delivers job-finished callbacks (SPEC "Events"): POST of the job record to the callback
 * URL. 2xx is success; a 5xx, a timeout or a network error is retried (up to `retries`
 * times, exponential backoff); any other status is final. Every attempt of one
 * notification carries the same X-Auris-Event-Id and its X-Auris-Attempt number.
 * Deliveries run concurrently (up to `concurrency`), so a slow receiver blocks no one.
 * Every attempt is signed (Standard Webhooks headers, src/callbacks/signing.ts) and its
 * outcome is written to the job record's `callback` (state, attempts, last status/error).
 */
import type { CallbackConfig } from '../config';
import { guardedFetch, isUrlNotAllowed, type UrlGuard } from '../download/guarded-http';
import type { CallbackOutcome, JobMetrics } from '../jobs/metrics';
import { mutateJob, serializeJob } from '../jobs/record';
import type { CallbackState, EventBus, EventDelivery, JobFinishedEvent, JobStore } from '../jobs/types';
import type { CallbackSecrets, Project } from './signing';

export const EVENT_ID_HEADER = 'x-auris-event-id';
export const ATTEMPT_HEADER = 'x-auris-attempt';
export const JOB_ID_HEADER = 'x-auris-job-id';
export const EVENT_TYPE_HEADER = 'x-auris-event-type';

export interface DispatcherLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface AttemptResult {
  outcome: CallbackOutcome;
  status?: number;
  /** Why it did not succeed, for the job record's callback.last_error. */
  error?: string;
  /** The URL was refused by the SSRF guard: final, state `refused`. */
  refused?: boolean;
  /** The error behind `error`, for the server log only. */
  detail?: unknown;
}

/** One POST with a timeout; never throws. */
export async function postCallback(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  signal?: AbortSignal,
  /** SSRF guard (src/download): the callback host's addresses are checked and connected to directly. */
  guard?: UrlGuard,
): Promise<AttemptResult> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([timeout, signal]) : timeout;
  try {
    const init = { method: 'POST' as const, body, headers: { 'content-type': 'application/json', 'user-agent': 'auris-callback/0.1', ...headers }, signal: combined };
    const res = guard ? await guardedFetch(url, init, guard, timeoutMs) : await fetch(url, { ...init, redirect: 'manual' });
    // Read (and drop) the body under the same timeout so a stalled body counts as a timeout too.
    await res.arrayBuffer().catch(() => undefined);
    const timedOut = `no answer within ${timeoutMs} ms`;
    if (timeout.aborted) return { outcome: 'timeout', status: res.status, error: timedOut };
    if (res.status >= 200 && res.status < 300) return { outcome: 'success', status: res.status };
    const error = `the receiver answered HTTP ${res.status}`;
    if (res.status >= 500) return { outcome: 'server_error', status: res.status, error };
    return { outcome: 'client_error', status: res.status, error };
  } catch (err) {
    if (timeout.aborted) return { outcome: 'timeout', error: `no answer within ${timeoutMs} ms` };
    const message = (err as Error).message ?? String(err);
    // The refusal says "not allowed", never the address; a network error never names the socket error (an oracle of the network behind the allowlist).
    if (isUrlNotAllowed(err)) return { outcome: 'client_error', refused: true, error: `refused: ${message}`, detail: err };
    return { outcome: 'network_error', error: 'network error: the receiver could not be reached or did not answer HTTP', detail: err };
  }
}

const retryable = (o: CallbackOutcome): boolean => o === 'server_error' || o === 'timeout' || o === 'network_error';

export class CallbackDispatcher {
  private sub: { stop(): Promise<void> } | null = null;
  private readonly abort = new AbortController();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly events: EventBus,
    private readonly config: CallbackConfig,
    private readonly metrics: JobMetrics,
    private readonly log: DispatcherLogger,
    /** Where the delivery state is recorded (the job record's `callback`). */
    private readonly jobs: JobStore,
    /** Signing secrets per project. */
    private readonly secrets: CallbackSecrets,
    /** SSRF guard for callback URLs (the download allowlist applies). */
    private readonly guard?: UrlGuard,
  ) {}

  start(): void {
    if (this.sub) return;
    this.sub = this.events.subscribe((d) => this.track(this.deliver(d)), { concurrency: this.config.concurrency });
  }

  /** Stops delivering; a notification not yet finished is delivered again after the next start. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.sub?.stop();
    this.sub = null;
    await Promise.all([...this.inFlight]);
  }

  private track(p: Promise<void>): Promise<void> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
    return p;
  }

  private async deliver(d: EventDelivery): Promise<void> {
    const ev = d.event;
    const project = ev.callback ? await this.projectOf(ev) : null;
    if (!ev.callback || !project) {
      await d.ack(); // no callback, or the job was deleted before its event was handled
      return;
    }
    const body = serializeJob(ev.record);
    const attempts = 1 + this.config.retries;
    let last: AttemptResult = { outcome: 'network_error' };
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (this.abort.signal.aborted) return; // not acked: delivered again after a restart
      const headers = {
        [EVENT_ID_HEADER]: ev.event_id,
        [ATTEMPT_HEADER]: String(attempt),
        [JOB_ID_HEADER]: ev.job_id,
        [EVENT_TYPE_HEADER]: ev.type,
        ...this.secrets.sign(project, ev.event_id, body), // a fresh timestamp per attempt
      };
      last = await postCallback(ev.callback, body, headers, this.config.timeoutMs, this.abort.signal, this.guard);
      if (this.abort.signal.aborted) return;
      this.metrics.callbackAttempts.inc({ outcome: last.outcome });
      const final = last.outcome === 'success' || !retryable(last.outcome) || attempt === attempts;
      await this.record(ev.job_id, attempt, last, final ? finalState(last) : 'pending');
      if (final) break;
      const stopped = await sleep(this.config.backoffMs * 2 ** (attempt - 1), this.abort.signal);
      if (stopped) return;
    }
    const delivered = last.outcome === 'success';
    this.metrics.callbacksDelivered.inc({ outcome: delivered ? 'delivered' : 'failed' });
    (delivered ? this.log.info : this.log.warn).call(
      this.log,
      { job_id: ev.job_id, event_id: ev.event_id, outcome: last.outcome, status: last.status, error: last.error, detail: describeDetail(last.detail) },
      delivered ? 'callback delivered' : last.refused ? 'callback refused' : 'callback failed',
    );
    await d.ack();
  }

  /** The event's project; events of older versions do not carry it: the stored job's owner. */
  private async projectOf(ev: JobFinishedEvent): Promise<Project | null> {
    if (ev.project) return ev.project;
    const job = await this.jobs.get(ev.job_id);
    return job ? job.value.owner : null;
  }

  /** Writes the attempt's outcome to the job record (a job deleted meanwhile is left alone). */
  private async record(jobId: string, attempts: number, r: AttemptResult, state: CallbackState): Promise<void> {
    try {
      await mutateJob(this.jobs, jobId, (j) => {
        const url = j.record.callback?.url ?? j.record.request.callback;
        if (!url) return null;
        j.record.callback = { url, state, attempts, last_status: r.status ?? null, last_error: r.error ?? null };
        return j;
      });
    } catch (err) {
      this.log.warn({ job_id: jobId, err: (err as Error).message }, 'could not record the callback outcome on the job');
    }
  }
}

/** The error and its cause, as text for the log. */
function describeDetail(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`;
}

function finalState(r: AttemptResult): CallbackState {
  if (r.outcome === 'success') return 'delivered';
  return r.refused ? 'refused' : 'failed';
}

/** Resolves after `ms`, or early with true when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(true);
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(false);
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      resolve(true);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
