import { type JobRecord, type JobStore, RevisionConflictError, type StoredJob, type Versioned } from './types';

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
  };
  return JSON.stringify(ordered);
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
