/**
 * The job model and the four storage/transport interfaces the REST routes, the job
 * worker and the callback dispatcher depend on. src/jobs/embedded/ implements them on
 * the local disk (the default); a NATS JetStream implementation (KV bucket, work-queue
 * stream, object store, event stream) implements the same interfaces later.
 * Nothing outside src/jobs/embedded/ may know which implementation runs.
 */
import type { Readable } from 'node:stream';

export type JobStatus = 'queued' | 'processing' | 'succeeded' | 'failed';
export const JOB_STATUSES: readonly JobStatus[] = ['queued', 'processing', 'succeeded', 'failed'];
export const isTerminal = (s: JobStatus): boolean => s === 'succeeded' || s === 'failed';

/**
 * The request parameters of a job, as given at creation (query string, normalised): the
 * `request` of the job record, on disk and on the wire. src/jobs/request.ts converts it
 * to and from the AnalysisRequest the analysis runs.
 */
export interface JobRequest {
  models: string[];
  output_period: number;
  channel: number | null;
  include_summary: boolean;
  include_transitions: boolean;
  include_raw_values: boolean;
  volume_threshold: number | null;
  callback: string | null;
  /** The speakers model's count parameters: present only when given (records older than them lack them). */
  num_speakers?: number;
  max_speakers?: number;
}

type ParamsOptional = Exclude<keyof JobRequest, 'models' | 'output_period'>;

/**
 * The creation parameters as a client sends them (the query string of POST /file-processing/jobs):
 * JobRequest's fields, each optional (absent instead of null) but models and output_period.
 */
export type JobParams = Pick<JobRequest, 'models' | 'output_period'> & { [K in ParamsOptional]?: NonNullable<JobRequest[K]> };

export interface JobSource {
  method: 'url' | 'upload';
  /** The file URL (URL method), else null. */
  url: string | null;
  /** Content-Type of the upload (direct upload), else null. */
  content_type: string | null;
  /** Bytes received (upload) or downloaded (URL), once known. */
  size_bytes: number | null;
}

export interface JobAudio {
  duration_sec: number;
  channels: number;
  sample_rate: number;
  format: string;
  /** Channels analysed (all, or the one selected by `channel`). */
  processed_channels: number;
}

export interface JobError {
  code: string;
  message: string;
}

/** Something the job got past but the caller should know (e.g. TRUNCATED_AUDIO). */
export interface JobWarning {
  code: string;
  message: string;
}

export type CallbackState = 'pending' | 'delivered' | 'failed' | 'refused';
export const CALLBACK_STATES: readonly CallbackState[] = ['pending', 'delivered', 'failed', 'refused'];

/** Where the job-finished callback stands (docs/api.md "Callbacks"). */
export interface CallbackStatus {
  url: string;
  /** pending until the job finished and delivery ended; delivered (2xx), failed (attempts used up or a final status), refused (URL not allowed). */
  state: CallbackState;
  /** POSTs made so far. */
  attempts: number;
  /** HTTP status of the latest attempt, null when none was received. */
  last_status: number | null;
  /** Why the latest attempt did not succeed (timeout, network error, refusal reason), else null. */
  last_error: string | null;
}

/** User metadata: a small string-to-string map given at creation and echoed. */
export type JobMetadata = Record<string, string>;

/**
 * The public job record: the body of GET /file-processing/jobs/{jobId} and of the
 * callback. Field order here is the order of the JSON.
 */
export interface JobRecord {
  job_id: string;
  status: JobStatus;
  /** 0 while queued, 0..1 while processing, 1 when succeeded. */
  progress: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** When the job and its results will be purged (finished_at + retention), else null. */
  expires_at: string | null;
  request: JobRequest;
  source: JobSource;
  audio: JobAudio | null;
  /** Path of the results once succeeded, else null. */
  results_url: string | null;
  /** Size of the JSON results, bytes, once succeeded. */
  results_size_bytes: number | null;
  error: JobError | null;
  /** The caller's metadata given at creation, else null. */
  metadata: JobMetadata | null;
  /** The callback's delivery state when the job has a callback, else null. */
  callback: CallbackStatus | null;
  /** Problems the job got past (empty when none). */
  warnings: JobWarning[];
}

/** What is stored: the public record plus the owner and the bookkeeping. */
export interface StoredJob {
  record: JobRecord;
  owner: { organization_id: string; project_id: string; key_id: string };
  /** Processing attempts started (a crash or restart in the middle counts). */
  attempts: number;
  /** Blob key of the uploaded audio while it is kept, else null. */
  upload_blob: string | null;
  /** Blob key of the results once succeeded, else null. */
  results_blob: string | null;
  /** The job-finished event id, fixed when the job finishes (every callback attempt carries it). */
  event_id: string | null;
  /** Idempotency-Key given at creation and the fingerprint of the request it created this job for. */
  idempotency?: { key: string; fingerprint: string } | null;
}

export interface Versioned<T> {
  value: T;
  revision: number;
}

export class RevisionConflictError extends Error {
  override name = 'RevisionConflictError';
  readonly code = 'REVISION_CONFLICT';
}

export class AlreadyExistsError extends Error {
  override name = 'AlreadyExistsError';
  readonly code = 'ALREADY_EXISTS';
}

/** Job records by id, with revision-checked updates (so two workers cannot both finish a job). */
export interface JobStore {
  /** Stores a new job; AlreadyExistsError if the id exists. Returns the revision. */
  create(job: StoredJob): Promise<number>;
  get(jobId: string): Promise<Versioned<StoredJob> | null>;
  /** Replaces the job if its revision is still `expectedRevision`; else RevisionConflictError. Returns the new revision. */
  update(job: StoredJob, expectedRevision: number): Promise<number>;
  /** Removes the job; false if it was not there. */
  delete(jobId: string): Promise<boolean>;
  /** Every job (for recovery, retention and metrics). */
  list(): Promise<StoredJob[]>;
}

/** One delivery of a queued job to a worker. */
export interface QueueMessage {
  jobId: string;
  /** 1 on the first delivery; more after a restart or a nak. */
  deliveryCount: number;
  /** Done with the job (finished, failed or deleted): never deliver it again. */
  ack(): Promise<void>;
  /**
   * Give the job back to the queue, to be delivered again after `delayMs` (default: at
   * once). `counted: false` (a shutdown, a transient storage fault: not the job's doing)
   * keeps this delivery out of deliveryCount where the backend allows it (embedded; JetStream
   * counts every delivery towards its max_deliver).
   */
  nak(opts?: { delayMs?: number; counted?: boolean }): Promise<void>;
  /** Heartbeat during long jobs (extends the redelivery deadline in distributed mode). */
  working(): Promise<void>;
}

/** At-least-once work queue of job ids; an unacked delivery is redelivered after a restart. */
export interface JobQueue {
  /** Deliveries of one job after which the worker gives up on it (fails it and acks). */
  readonly maxDeliveries: number;
  /** Adds a job; idempotent per job id while it is queued or in flight. */
  enqueue(jobId: string): Promise<void>;
  /** Next job, waiting until one is queued; null once `signal` aborts or the queue closes. */
  pull(signal: AbortSignal): Promise<QueueMessage | null>;
  /** Job ids queued or in flight. */
  pending(): Promise<string[]>;
  close(): Promise<void>;
}

/** Large objects: uploaded audio and JSON results. */
export interface BlobStore {
  /** Writes the stream under `key`; if more than `maxBytes` arrive, stops and throws BlobTooLargeError (nothing is kept). */
  putStream(key: string, data: Readable, opts?: { maxBytes?: number }): Promise<{ size: number }>;
  put(key: string, data: Buffer | string): Promise<{ size: number }>;
  /** Reads the object; null if it does not exist. */
  getStream(key: string): Promise<{ stream: Readable; size: number } | null>;
  /**
   * A local file path holding the object, for the decoder. The embedded store returns its
   * own file; a remote store copies to a temporary file and `release` removes it.
   */
  localFile(key: string): Promise<{ path: string; release(): Promise<void> } | null>;
  delete(key: string): Promise<void>;
  /**
   * Every key (for cleaning up orphans). A store shared by several nodes leaves out keys
   * written in the last minutes: they may belong to a job another node is creating.
   */
  keys(): Promise<string[]>;
}

export class BlobTooLargeError extends Error {
  override name = 'BlobTooLargeError';
  readonly code = 'BLOB_TOO_LARGE';
  constructor(readonly maxBytes: number) {
    super(`more than ${maxBytes} bytes`);
  }
}

/**
 * The storage or queue backend cannot be reached now (e.g. the NATS cluster is down);
 * the request may be retried later. The REST API answers 503 with Retry-After.
 */
export class BackendUnavailableError extends Error {
  override name = 'BackendUnavailableError';
  readonly code = 'BACKEND_UNAVAILABLE';
  constructor(
    message: string,
    /** Seconds after which a retry makes sense. */
    readonly retryAfterSec = 5,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The job-finished event (the spec's only event). */
export interface JobFinishedEvent {
  type: 'job.finished';
  event_id: string;
  job_id: string;
  occurred_at: string;
  /** The job record at the time it finished: the callback body. */
  record: JobRecord;
  /** Callback URL, or null when the job has none. */
  callback: string | null;
  /** The job's project (chooses the signing secret); absent in events published by older versions. */
  project?: { organization_id: string; project_id: string };
}

export interface EventDelivery {
  event: JobFinishedEvent;
  ack(): Promise<void>;
}

/** A delivery whose ack runs `confirm` once (a second call does nothing); `acked()` tells whether it ran. */
export function deliveryOf(event: JobFinishedEvent, confirm: () => Promise<void>): { delivery: EventDelivery; acked(): boolean } {
  let acked = false;
  const delivery: EventDelivery = {
    event,
    ack: async () => {
      if (acked) return;
      acked = true;
      await confirm();
    },
  };
  return { delivery, acked: () => acked };
}

/** Durable events: a published event is handed to the subscriber until it is acked, across restarts. */
export interface EventBus {
  /** Publishes; idempotent per event_id. */
  publish(event: JobFinishedEvent): Promise<void>;
  /** Hands each unacked event to `handler`, up to `concurrency` at a time. */
  subscribe(handler: (delivery: EventDelivery) => Promise<void>, opts: { concurrency: number }): { stop(): Promise<void> };
  close(): Promise<void>;
}

/** The four backends together. */
export interface Backends {
  jobs: JobStore;
  queue: JobQueue;
  blobs: BlobStore;
  events: EventBus;
  close(): Promise<void>;
}
