/**
 * Job lifecycle operations used by the REST routes: create, read, delete, results.
 * Depends only on the Backends interfaces.
 */
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Config } from '../config';
import type { JobMetrics } from './metrics';
import { newCallbackStatus } from './record';
import { hashingStream, hashOf, IDEMPOTENCY_WINDOW_MS, idempotentJobId, requestFingerprint } from './idempotency';
import { AlreadyExistsError, BlobTooLargeError, isTerminal, type Backends, type JobMetadata, type JobRecord, type JobRequest, type StoredJob } from './types';

export interface Owner {
  organization_id: string;
  project_id: string;
  key_id: string;
}

/** Optional parts of a new job. */
export interface NewJobExtras {
  metadata?: JobMetadata | null;
  /** Idempotency-Key of the request (validated by the caller). */
  idempotencyKey?: string;
  /** Runs before a new job is stored (not for a replay); throws to refuse it (e.g. the unfinished-jobs limit). */
  admit?: () => Promise<void>;
}

export interface CreatedJob {
  job: StoredJob;
  /** True when an earlier request with the same Idempotency-Key created it. */
  replayed: boolean;
}

/** The Idempotency-Key was used within the window for a different request. */
export class IdempotencyConflictError extends Error {
  override name = 'IdempotencyConflictError';
  constructor(readonly jobId: string) {
    super(`this Idempotency-Key was used for a different request (job ${jobId})`);
  }
}

const expired = (job: StoredJob): boolean => Date.now() - Date.parse(job.record.created_at) > IDEMPOTENCY_WINDOW_MS;

function newJob(
  jobId: string,
  owner: Owner,
  request: JobRequest,
  source: NewJobSource,
  parts: { size: number | null; uploadBlob: string | null; metadata: JobMetadata | null },
): StoredJob {
  const record: JobRecord = {
    job_id: jobId,
    status: 'queued',
    progress: 0,
    created_at: new Date().toISOString(),
    started_at: null,
    finished_at: null,
    expires_at: null,
    request,
    source: {
      method: source.method,
      url: source.method === 'url' ? source.url : null,
      content_type: source.method === 'upload' ? source.contentType : null,
      size_bytes: parts.size,
    },
    audio: null,
    results_url: null,
    results_size_bytes: null,
    error: null,
    metadata: parts.metadata,
    callback: request.callback ? newCallbackStatus(request.callback) : null,
    warnings: [],
  };
  return { record, owner, attempts: 0, upload_blob: parts.uploadBlob, results_blob: null, event_id: null, idempotency: null };
}

export type NewJobSource =
  | { method: 'upload'; contentType: string; body: Readable; declaredLength?: number }
  | { method: 'url'; url: string };

export type ResultsState =
  | { state: 'ready'; stream: Readable; size: number }
  | { state: 'not_ready'; job: StoredJob }
  | { state: 'failed'; job: StoredJob }
  | { state: 'missing' };

export const uploadKey = (jobId: string): string => `uploads/${jobId}`;
export const resultsKey = (jobId: string): string => `results/${jobId}.json`;
export const resultsPath = (jobId: string): string => `/file-processing/jobs/${jobId}/results`;

export class JobService {
  /** Called after a DELETE so a worker in this process stops the job at once. */
  onDeleted: ((jobId: string) => void) | null = null;

  constructor(
    private readonly backends: Backends,
    private readonly config: Config,
    private readonly metrics: JobMetrics,
  ) {}

  /**
   * Creates and enqueues a job. Throws BlobTooLargeError for an upload over the limit.
   * With `idempotencyKey`: the job this key created within IDEMPOTENCY_WINDOW_MS is returned
   * (`replayed`) when the request is the same, IdempotencyConflictError when it is not.
   */
  async create(owner: Owner, request: JobRequest, source: NewJobSource, extras: NewJobExtras = {}): Promise<CreatedJob> {
    const metadata = extras.metadata ?? null;
    const key = extras.idempotencyKey;
    let jobId: string = randomUUID();
    if (key !== undefined) {
      const keyedId = idempotentJobId(owner, key);
      const prior = await this.backends.jobs.get(keyedId);
      if (!prior || !expired(prior.value)) jobId = keyedId;
      if (prior && !expired(prior.value)) return this.replay(prior.value, await this.fingerprint(request, metadata, source, null));
    }
    await extras.admit?.();
    let size: number | null = null;
    let uploadBlob: string | null = null;
    let bodyDigest: (() => string) | null = null;
    if (source.method === 'upload') {
      // A keyed upload gets a blob of its own: two racing requests must not write one file.
      uploadBlob = key === undefined ? uploadKey(jobId) : `${uploadKey(jobId)}.${randomUUID()}`;
      const hashed = key === undefined ? null : hashingStream(source.body);
      bodyDigest = hashed && hashed.digest;
      size = (await this.backends.blobs.putStream(uploadBlob, hashed?.stream ?? source.body, { maxBytes: this.config.limits.maxUploadBytes })).size;
    }
    const job = newJob(jobId, owner, request, source, { size, uploadBlob, metadata });
    if (key !== undefined) job.idempotency = { key, fingerprint: await this.fingerprint(request, metadata, source, bodyDigest?.() ?? null) };
    try {
      await this.backends.jobs.create(job);
    } catch (err) {
      if (uploadBlob) await this.backends.blobs.delete(uploadBlob).catch(() => undefined);
      if (err instanceof AlreadyExistsError && key !== undefined) {
        const winner = await this.backends.jobs.get(jobId); // a request with the same key was faster
        if (winner) return this.replay(winner.value, job.idempotency!.fingerprint);
      }
      throw err;
    }
    try {
      await this.backends.queue.enqueue(jobId);
    } catch (err) {
      await this.backends.jobs.delete(jobId).catch(() => undefined);
      if (uploadBlob) await this.backends.blobs.delete(uploadBlob).catch(() => undefined);
      throw err;
    }
    this.metrics.jobsCreated.inc();
    return { job, replayed: false };
  }

  /** The fingerprint of a creation request; an upload body not hashed yet is read here. */
  private async fingerprint(request: JobRequest, metadata: JobMetadata | null, source: NewJobSource, bodyDigest: string | null): Promise<string> {
    let body: string;
    if (source.method === 'url') body = source.url;
    else if (bodyDigest !== null) body = bodyDigest;
    else {
      const h = await hashOf(source.body, this.config.limits.maxUploadBytes);
      if (!h) throw new BlobTooLargeError(this.config.limits.maxUploadBytes);
      body = h.digest;
    }
    return requestFingerprint({ request, metadata, method: source.method, contentType: source.method === 'upload' ? source.contentType : null, body });
  }

  private replay(prior: StoredJob, fingerprint: string): CreatedJob {
    if (prior.idempotency?.fingerprint !== fingerprint) throw new IdempotencyConflictError(prior.record.job_id);
    return { job: prior, replayed: true };
  }

  /** The job if it exists and belongs to the owner's organization and project. */
  async get(owner: Owner, jobId: string): Promise<StoredJob | null> {
    const cur = await this.backends.jobs.get(jobId);
    if (!cur || !sameProject(cur.value.owner, owner)) return null;
    return cur.value;
  }

  /** Deletes the job, its upload and its results. False if there was no such job for the owner. */
  async delete(owner: Owner, jobId: string): Promise<boolean> {
    const job = await this.get(owner, jobId);
    if (!job) return false;
    await this.purge(job);
    this.onDeleted?.(jobId);
    return true;
  }

  /** Removes a job and everything it stored (used by DELETE and by retention). */
  async purge(job: StoredJob): Promise<void> {
    const id = job.record.job_id;
    await this.backends.jobs.delete(id);
    await Promise.all([
      this.backends.blobs.delete(uploadKey(id)),
      this.backends.blobs.delete(resultsKey(id)),
      job.upload_blob ? this.backends.blobs.delete(job.upload_blob) : undefined,
      job.results_blob ? this.backends.blobs.delete(job.results_blob) : undefined,
    ]);
  }

  async results(owner: Owner, jobId: string): Promise<ResultsState> {
    const job = await this.get(owner, jobId);
    if (!job) return { state: 'missing' };
    if (job.record.status === 'failed') return { state: 'failed', job };
    if (job.record.status !== 'succeeded' || !job.results_blob) return { state: 'not_ready', job };
    const blob = await this.backends.blobs.getStream(job.results_blob);
    if (!blob) return { state: 'missing' };
    return { state: 'ready', ...blob };
  }

  /** Unfinished jobs created with this API key. */
  async activeJobsOfKey(keyId: string): Promise<number> {
    let n = 0;
    for (const j of await this.backends.jobs.list()) if (j.owner.key_id === keyId && !isTerminal(j.record.status)) n++;
    return n;
  }
}

function sameProject(a: Owner, b: Owner): boolean {
  return a.organization_id === b.organization_id && a.project_id === b.project_id;
}
