/**
 * Delivers job-finished callbacks (SPEC "Events"): POST of the job record to the callback
 * URL. 2xx is success; a 5xx, a timeout or a network error is retried (up to `retries`
 * times, exponential backoff); any other status is final. Every attempt of one
 * notification carries the same X-Auris-Event-Id and its X-Auris-Attempt number.
 * Deliveries run concurrently (up to `concurrency`), so a slow receiver blocks no one.
 */
import type { CallbackConfig } from '../config';
import { guardedFetch, isUrlNotAllowed, type UrlGuard } from '../download/guarded-http';
import type { CallbackOutcome, JobMetrics } from '../jobs/metrics';
import { serializeJob } from '../jobs/record';
import type { EventBus, EventDelivery } from '../jobs/types';

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
    if (timeout.aborted) return { outcome: 'timeout', status: res.status };
    if (res.status >= 200 && res.status < 300) return { outcome: 'success', status: res.status };
    if (res.status >= 500) return { outcome: 'server_error', status: res.status };
    return { outcome: 'client_error', status: res.status };
  } catch (err) {
    if (timeout.aborted) return { outcome: 'timeout' };
    if (isUrlNotAllowed(err)) return { outcome: 'client_error' }; // SSRF refusal: final
    return { outcome: 'network_error' };
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
    if (!ev.callback) {
      await d.ack();
      return;
    }
    const body = serializeJob(ev.record);
    const attempts = 1 + this.config.retries;
    let last: AttemptResult = { outcome: 'network_error' };
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (this.abort.signal.aborted) return; // not acked: delivered again after a restart
      last = await postCallback(
        ev.callback,
        body,
        { [EVENT_ID_HEADER]: ev.event_id, [ATTEMPT_HEADER]: String(attempt), [JOB_ID_HEADER]: ev.job_id, [EVENT_TYPE_HEADER]: ev.type },
        this.config.timeoutMs,
        this.abort.signal,
        this.guard,
      );
      if (this.abort.signal.aborted) return;
      this.metrics.callbackAttempts.inc({ outcome: last.outcome });
      if (last.outcome === 'success' || !retryable(last.outcome)) break;
      if (attempt < attempts) {
        const delay = this.config.backoffMs * 2 ** (attempt - 1);
        const stopped = await sleep(delay, this.abort.signal);
        if (stopped) return;
      }
    }
    const delivered = last.outcome === 'success';
    this.metrics.callbacksDelivered.inc({ outcome: delivered ? 'delivered' : 'failed' });
    (delivered ? this.log.info : this.log.warn).call(
      this.log,
      { job_id: ev.job_id, event_id: ev.event_id, outcome: last.outcome, status: last.status },
      delivered ? 'callback delivered' : 'callback failed',
    );
    await d.ack();
  }
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
