import { CALLBACK_STATES, type CallbackState, type CallbackStatus, JOB_STATUSES, type JobRecord, type JobStatus, type JobStore, RevisionConflictError, type StoredJob, type Versioned } from './types';

/**
 * The JSON of a job record, byte for byte the body of GET /file-processing/jobs/{jobId}
 * and of the callback (both use this function).
 */
export function serializeJob(record: JobRecord): string {
  const ordered: JobRecord = {
    job_id: record.job_id,
    status: record.status,
    progress: record.progress,
    created_at: record.created_at,
    started_at: record.started_at,
    finished_at: record.finished_at,
    expires_at: record.expires_at,
    request: {
      models: record.request.models,
      output_period: record.request.output_period,
      channel: record.request.channel,
      include_summary: record.request.include_summary,
      include_transitions: record.request.include_transitions,
      include_raw_values: record.request.include_raw_values,
      volume_threshold: record.request.volume_threshold,
      callback: record.request.callback,
      ...(record.request.num_speakers !== undefined ? { num_speakers: record.request.num_speakers } : {}),
      ...(record.request.max_speakers !== undefined ? { max_speakers: record.request.max_speakers } : {}),
    },
    source: {
      method: record.source.method,
      url: record.source.url,
      content_type: record.source.content_type,
      size_bytes: record.source.size_bytes,
    },
    audio: record.audio && {
      duration_sec: record.audio.duration_sec,
      channels: record.audio.channels,
      sample_rate: record.audio.sample_rate,
      format: record.audio.format,
      processed_channels: record.audio.processed_channels,
    },
    results_url: record.results_url,
    results_size_bytes: record.results_size_bytes,
    error: record.error && { code: record.error.code, message: record.error.message },
    // Records stored by older versions lack the next three fields.
    metadata: record.metadata ?? null,
    callback: callbackOf(record),
    warnings: (record.warnings ?? []).map((w) => ({ code: w.code, message: w.message })),
  };
  return JSON.stringify(ordered);
}

function callbackOf(record: JobRecord): CallbackStatus | null {
  const c = record.callback;
  if (c) return { url: c.url, state: c.state, attempts: c.attempts, last_status: c.last_status, last_error: c.last_error };
  return record.request.callback ? newCallbackStatus(record.request.callback) : null;
}

export function newCallbackStatus(url: string): CallbackStatus {
  return { url, state: 'pending', attempts: 0, last_status: null, last_error: null };
}

/**
 * Read-modify-write with the store's revision check, retried on conflict.
 * `fn` returns the new job, or null to leave it unchanged. Null when the job is gone.
 */
export async function mutateJob(
  store: JobStore,
  jobId: string,
  fn: (job: StoredJob) => StoredJob | null,
): Promise<Versioned<StoredJob> | null> {
  for (let i = 0; ; i++) {
    const cur = await store.get(jobId);
    if (!cur) return null;
    const next = fn(cur.value);
    if (!next) return cur;
    try {
      const revision = await store.update(next, cur.revision);
      return { value: next, revision };
    } catch (err) {
      if (!(err instanceof RevisionConflictError) || i >= 20) throw err;
    }
  }
}

type Check = (v: unknown) => boolean;
const str: Check = (v) => typeof v === 'string';
const num: Check = (v) => typeof v === 'number' && Number.isFinite(v);
const bool: Check = (v) => typeof v === 'boolean';
const orNull = (c: Check): Check => (v) => v === null || c(v);
/** Absent (older records, or not given) or valid. */
const optional = (c: Check): Check => (v) => v === undefined || c(v);
const obj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Absent (older records) or null. */
const none = (v: unknown): boolean => v === undefined || v === null;
const metadataOk: Check = (m) => none(m) || (obj(m) && Object.values(m).every(str));
const warningsOk: Check = (w) => w === undefined || (Array.isArray(w) && w.every((x) => obj(x) && str(x.code) && str(x.message)));
const callbackOk: Check = (c) =>
  none(c) ||
  (obj(c) &&
    str(c.url) &&
    CALLBACK_STATES.includes(c.state as CallbackState) &&
    num(c.attempts) &&
    orNull(num)(c.last_status) &&
    orNull(str)(c.last_error));
const idempotencyOk: Check = (i) => none(i) || (obj(i) && str(i.key) && str(i.fingerprint));

/** The first field of `o` (named `where.<field>`) that fails its check, else null. */
function firstBad(o: unknown, where: string, fields: Record<string, Check>): string | null {
  if (!obj(o)) return `${where} is not an object`;
  for (const [k, check] of Object.entries(fields)) if (!check(o[k])) return `${where}.${k} is missing or of the wrong type`;
  return null;
}

/**
 * What is wrong with a stored job read back from storage (a hand-edited, truncated or
 * older file), or null when every field of the record has its type (the whole shape: a
 * wrongly typed `warnings`, `metadata` or `callback` made every listing of its project
 * answer 500). A malformed record is set aside on load, never handed to the API or the
 * worker, where a missing field would throw on every request or delivery.
 */
export function storedJobProblem(v: unknown): string | null {
  const job = v as Partial<StoredJob> | null;
  const top = firstBad(job, 'job', {
    record: obj,
    owner: obj,
    attempts: num,
    upload_blob: orNull(str),
    results_blob: orNull(str),
    event_id: orNull(str),
    idempotency: idempotencyOk,
  });
  if (top) return top;
  const r = job!.record!;
  return (
    firstBad(r, 'record', {
      job_id: str,
      status: (s) => JOB_STATUSES.includes(s as JobStatus),
      progress: num,
      created_at: str,
      started_at: orNull(str),
      finished_at: orNull(str),
      expires_at: orNull(str),
      results_url: orNull(str),
      results_size_bytes: orNull(num),
      metadata: metadataOk,
      callback: callbackOk,
      warnings: warningsOk,
    }) ??
    firstBad(r.request, 'record.request', {
      models: (m) => Array.isArray(m) && m.every(str),
      output_period: num,
      channel: orNull(num),
      include_summary: bool,
      include_transitions: bool,
      include_raw_values: bool,
      volume_threshold: orNull(num),
      callback: orNull(str),
      num_speakers: optional(num),
      max_speakers: optional(num),
    }) ??
    firstBad(r.source, 'record.source', { method: (m) => m === 'url' || m === 'upload', url: orNull(str), content_type: orNull(str), size_bytes: orNull(num) }) ??
    (r.audio === null ? null : firstBad(r.audio, 'record.audio', { duration_sec: num, channels: num, sample_rate: num, format: str, processed_channels: num })) ??
    (r.error === null ? null : firstBad(r.error, 'record.error', { code: str, message: str })) ??
    firstBad(job!.owner, 'owner', { organization_id: str, project_id: str, key_id: str })
  );
}
