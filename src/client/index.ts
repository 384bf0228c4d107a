/**
 * A typed client of the REST API (docs/api.md), for Node 20+ (global fetch):
 *
 *   const auris = new AurisClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'my-key' });
 *   const job = await auris.createJob({ file: 'talk.wav' }, { models: ['speech', 'gender'], output_period: 1024 });
 *   // the speaker map: { models: ['speakers'], output_period: 1024, num_speakers: 2 } (or max_speakers)
 *   const done = await auris.waitForJob(job.job_id, { onProgress: (j) => console.log(j.progress) });
 *   const results = await auris.getResults(done.job_id);
 *
 * Every error answer becomes an AurisApiError carrying the problem's stable `code`
 * (e.g. UNKNOWN_MODEL, JOB_NOT_FOUND, RATE_LIMITED) and the whole problem body.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type { JobMetadata, JobParams, JobRecord, JobStatus } from '../jobs/types';

export type { JobRecord, JobStatus, JobMetadata, JobParams };

export interface ClientOptions {
  baseUrl: string;
  apiKey: string;
  /** Replaces the global fetch (tests, proxies). */
  fetch?: typeof fetch;
}

/** The audio: a local file, bytes already in memory, or a URL the service downloads. */
export type JobInput = { file: string; contentType?: string } | { data: Uint8Array; contentType?: string } | { url: string };

export interface CreateOptions {
  metadata?: JobMetadata;
  /** Makes the creation safe to retry; `true`: a fresh random key (used for this call's own retries). */
  idempotencyKey?: string | true;
}

export interface ListOptions {
  status?: JobStatus;
  created_after?: string | Date;
  created_before?: string | Date;
  limit?: number;
  cursor?: string;
}

export interface JobPage {
  jobs: JobRecord[];
  next_cursor: string | null;
}

export interface WaitOptions {
  /** Called with each polled record whose status or progress changed. */
  onProgress?: (job: JobRecord) => void;
  intervalMs?: number;
  /** Give up (AurisTimeoutError) after this long; default: never. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface ResultsEnvelope {
  job_id: string;
  result: { channels: Record<string, { time_series: Array<{ timestamp: number; results: Record<string, { result: string; confidence: number }> }>; [k: string]: unknown }> };
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  [extension: string]: unknown;
}

/** An error answer of the service (application/problem+json). */
export class AurisApiError extends Error {
  override name = 'AurisApiError';
  readonly code: string;
  readonly status: number;
  /** Seconds from Retry-After, when sent. */
  readonly retryAfter: number | null;
  constructor(
    readonly problem: Problem,
    retryAfter: string | null,
  ) {
    super(`${problem.code}: ${problem.detail}`);
    this.code = problem.code;
    this.status = problem.status;
    this.retryAfter = retryAfter === null ? null : Number(retryAfter);
  }
}

/** waitForJob ran out of time; the job goes on. */
export class AurisTimeoutError extends Error {
  override name = 'AurisTimeoutError';
  readonly code = 'CLIENT_TIMEOUT';
  constructor(readonly job: JobRecord) {
    super(`job ${job.job_id} still ${job.status} (progress ${job.progress})`);
  }
}

const CONTENT_TYPES: Record<string, string> = {
  '.wav': 'audio/wav',
  '.flac': 'audio/flac',
  '.mp3': 'audio/mpeg',
  '.ogg': 'audio/ogg',
  '.oga': 'audio/ogg',
  '.opus': 'audio/opus',
};

export function contentTypeOf(path: string): string {
  return CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
}

export class AurisClient {
  private readonly base: string;
  private readonly doFetch: typeof fetch;

  constructor(private readonly opts: ClientOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
    this.doFetch = opts.fetch ?? fetch;
  }

  async createJob(input: JobInput, params: JobParams, options: CreateOptions = {}): Promise<JobRecord> {
    const query = new URLSearchParams({ models: params.models.join(','), output_period: String(params.output_period) });
    for (const k of ['channel', 'include_summary', 'include_transitions', 'include_raw_values', 'volume_threshold', 'num_speakers', 'max_speakers', 'callback'] as const) {
      if (params[k] !== undefined) query.set(k, String(params[k]));
    }
    const headers: Record<string, string> = {};
    if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey === true ? randomUUID() : options.idempotencyKey;
    let body: RequestInit['body'];
    if ('url' in input) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.metadata ? { url: input.url, metadata: options.metadata } : { url: input.url });
    } else {
      if (options.metadata) query.set('metadata', JSON.stringify(options.metadata));
      const bytes = 'file' in input ? await readFile(input.file) : input.data;
      headers['content-type'] = input.contentType ?? ('file' in input ? contentTypeOf(input.file) : 'application/octet-stream');
      body = bytes as unknown as RequestInit['body'];
    }
    return this.json<JobRecord>(`/file-processing/jobs?${query}`, { method: 'POST', headers, body });
  }

  getJob(jobId: string): Promise<JobRecord> {
    return this.json<JobRecord>(`/file-processing/jobs/${encodeURIComponent(jobId)}`);
  }

  /** Polls until the job succeeded or failed (a failed job is returned, not thrown: see `error`). */
  async waitForJob(jobId: string, opts: WaitOptions = {}): Promise<JobRecord> {
    const started = Date.now();
    let last = '';
    for (;;) {
      const job = await this.getJob(jobId);
      const seen = `${job.status}:${job.progress}`;
      if (seen !== last) opts.onProgress?.(job);
      last = seen;
      if (job.status === 'succeeded' || job.status === 'failed') return job;
      if (opts.timeoutMs !== undefined && Date.now() - started > opts.timeoutMs) throw new AurisTimeoutError(job);
      await delay(opts.intervalMs ?? 500, opts.signal);
    }
  }

  getResults(jobId: string): Promise<ResultsEnvelope> {
    return this.json<ResultsEnvelope>(`/file-processing/jobs/${encodeURIComponent(jobId)}/results`);
  }

  async deleteJob(jobId: string): Promise<void> {
    await this.request(`/file-processing/jobs/${encodeURIComponent(jobId)}`, { method: 'DELETE' });
  }

  /** One page of the project's jobs, newest first. */
  listJobs(opts: ListOptions = {}): Promise<JobPage> {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts)) if (v !== undefined) q.set(k, v instanceof Date ? v.toISOString() : String(v));
    return this.json<JobPage>(`/file-processing/jobs${q.size ? `?${q}` : ''}`);
  }

  /** Every job matching the filters, page after page. */
  async *allJobs(opts: Omit<ListOptions, 'cursor'> = {}): AsyncGenerator<JobRecord> {
    let cursor: string | undefined;
    do {
      const page = await this.listJobs({ ...opts, cursor });
      yield* page.jobs;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /** The installed models (GET /models). */
  listModels(): Promise<{ models: Array<{ name: string; version: string; labels: string[]; raw_keys: string[]; receptive_field_ms: number; lookahead_ms: number }> }> {
    return this.json('/models');
  }

  private async json<T>(path: string, init: RequestInit = {}): Promise<T> {
    return (await (await this.request(path, init)).json()) as T;
  }

  private async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = { ...(init.headers as Record<string, string> | undefined), 'x-api-key': this.opts.apiKey };
    const res = await this.doFetch(this.base + path, { ...init, headers });
    if (res.ok) return res;
    const text = await res.text();
    let problem: Problem;
    try {
      problem = JSON.parse(text) as Problem;
      if (typeof problem.code !== 'string') throw new Error('not a problem');
    } catch {
      problem = { type: 'about:blank', title: res.statusText, status: res.status, detail: text.slice(0, 500), code: `HTTP_${res.status}` };
    }
    throw new AurisApiError(problem, res.headers.get('retry-after'));
  }
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason);
    }, { once: true });
  });
}
