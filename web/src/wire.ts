/**
 * The REST and WebSocket wire types the console reads (docs/api.md, docs/results.md), written
 * here without imports so the browser build needs nothing from the server. They are the
 * server's own types field for field: test/console/wire-types.ts asserts both ways that they
 * are assignable to the server's (src/jobs/types.ts, src/analysis/postprocess.ts), and
 * `npm run build:ts` fails when one side changes without the other.
 */

export type JobStatus = 'queued' | 'processing' | 'succeeded' | 'failed';

/** A job's parameters as recorded (`request` of the job record). */
export interface JobRequest {
  models: string[];
  output_period: number;
  channel: number | null;
  include_summary: boolean;
  include_transitions: boolean;
  include_raw_values: boolean;
  volume_threshold: number | null;
  callback: string | null;
  /** The speakers model's count parameters, present when given. */
  num_speakers?: number;
  max_speakers?: number;
}

export interface JobRecord {
  job_id: string;
  status: JobStatus;
  progress: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  expires_at: string | null;
  request: JobRequest;
  source: { method: 'url' | 'upload'; url: string | null; content_type: string | null; size_bytes: number | null };
  audio: { duration_sec: number; channels: number; sample_rate: number; format: string; processed_channels: number } | null;
  results_url: string | null;
  results_size_bytes: number | null;
  error: { code: string; message: string } | null;
  metadata: Record<string, string> | null;
  callback: {
    url: string;
    state: 'pending' | 'delivered' | 'failed' | 'refused';
    attempts: number;
    last_status: number | null;
    last_error: string | null;
  } | null;
  warnings: Array<{ code: string; message: string }>;
}

export interface ModelResult {
  result: string;
  confidence: number;
}

/** One output step (a job's time_series entry, and a message of GET /stream). */
export interface TimeStep {
  timestamp: number;
  results: Record<string, ModelResult>;
  raw?: Record<string, Record<string, number>>;
}

export interface Segment {
  timestamp_start: number;
  timestamp_end: number;
  result: string;
  confidence: number;
}

export interface ChannelResult {
  time_series: TimeStep[];
  summary?: Record<string, Record<string, number>>;
  transitions?: Record<string, Segment[]>;
}

export interface ResultsEnvelope {
  job_id: string;
  result: { channels: Record<string, ChannelResult> };
}
