/**
 * The console's client of the public REST API (docs/api.md): only /file-processing/jobs
 * endpoints and POST /stream-tokens with the x-api-key header, plus the unauthenticated
 * /readyz for the model list.
 * Errors are RFC 9457 problem+json bodies with a stable `code`.
 */

export type { ChannelResult, JobRecord, JobRequest, JobStatus, ModelResult, ResultsEnvelope, Segment, TimeStep } from './wire.js';
import type { JobRecord, JobRequest, ResultsEnvelope } from './wire.js';

/** What the New job form sends: a job's request without the callback (the console sets none). */
export type JobRequestParams = Omit<JobRequest, 'callback'> & { callback?: string | null; metadata?: Record<string, string> };

/** A problem+json error answered by the API (or a network failure, code NETWORK_ERROR). */
export class ApiProblem extends Error {
  override name = 'ApiProblem';
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(detail);
  }
}

export interface CreateJobInput {
  params: JobRequestParams;
  file?: File | Blob;
  contentType?: string;
  url?: string;
}

const AUDIO_TYPES_BY_EXT: Record<string, string> = {
  wav: 'audio/wav',
  wave: 'audio/wav',
  flac: 'audio/flac',
  mp3: 'audio/mpeg',
  ogg: 'audio/ogg',
  opus: 'audio/ogg',
};

/** The Content-Type to upload a file with: its own audio type, else by extension, else octet-stream. */
export function uploadContentType(file: { name?: string; type?: string }): string {
  const accepted = ['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave', 'audio/flac', 'audio/x-flac', 'audio/mpeg', 'audio/mp3', 'audio/ogg', 'audio/opus'];
  const t = (file.type ?? '').toLowerCase();
  if (accepted.includes(t)) return t;
  const ext = (file.name ?? '').toLowerCase().split('.').pop() ?? '';
  return AUDIO_TYPES_BY_EXT[ext] ?? 'application/octet-stream';
}

/** The query string of a create request. */
export function createQuery(p: JobRequestParams): string {
  const q = new URLSearchParams();
  q.set('models', p.models.join(','));
  q.set('output_period', String(p.output_period));
  if (p.channel !== null) q.set('channel', String(p.channel));
  q.set('include_summary', String(p.include_summary));
  q.set('include_transitions', String(p.include_transitions));
  q.set('include_raw_values', String(p.include_raw_values));
  if (p.volume_threshold !== null) q.set('volume_threshold', String(p.volume_threshold));
  if (p.num_speakers !== undefined) q.set('num_speakers', String(p.num_speakers));
  if (p.max_speakers !== undefined) q.set('max_speakers', String(p.max_speakers));
  if (p.callback) q.set('callback', p.callback);
  if (p.metadata) q.set('metadata', JSON.stringify(p.metadata));
  return q.toString();
}

export class AurisApi {
  constructor(
    private readonly key: () => string,
    private readonly base = '',
  ) {}

  private async request(path: string, init: RequestInit = {}, auth = true): Promise<Response> {
    const headers = new Headers(init.headers);
    if (auth) headers.set('x-api-key', this.key());
    headers.set('accept', 'application/json, application/problem+json');
    let res: Response;
    try {
      res = await fetch(this.base + path, { ...init, headers, cache: 'no-store' });
    } catch (err) {
      throw new ApiProblem(0, 'NETWORK_ERROR', `The server could not be reached (${(err as Error).message}).`);
    }
    if (!res.ok) throw await toProblem(res);
    return res;
  }

  /** Model names installed on the server (from /readyz), or null when it does not say. */
  async models(): Promise<string[] | null> {
    try {
      const res = await fetch(this.base + '/readyz', { cache: 'no-store' });
      const body = (await res.json()) as { models?: unknown };
      return Array.isArray(body.models) ? body.models.filter((m): m is string => typeof m === 'string') : null;
    } catch {
      return null;
    }
  }

  async createJob(input: CreateJobInput): Promise<JobRecord> {
    const path = `/file-processing/jobs?${createQuery(input.params)}`;
    const init: RequestInit = { method: 'POST' };
    if (input.url !== undefined) {
      init.headers = { 'content-type': 'application/json' };
      init.body = JSON.stringify({ url: input.url });
    } else if (input.file) {
      init.headers = { 'content-type': input.contentType ?? 'application/octet-stream' };
      init.body = input.file;
    }
    return (await this.request(path, init)).json() as Promise<JobRecord>;
  }

  async getJob(id: string): Promise<JobRecord> {
    return (await this.request(`/file-processing/jobs/${encodeURIComponent(id)}`)).json() as Promise<JobRecord>;
  }

  /** The results as text (kept verbatim for the JSON download) and parsed. */
  async getResults(id: string): Promise<{ text: string; envelope: ResultsEnvelope }> {
    const text = await (await this.request(`/file-processing/jobs/${encodeURIComponent(id)}/results`)).text();
    return { text, envelope: JSON.parse(text) as ResultsEnvelope };
  }

  async deleteJob(id: string): Promise<void> {
    await this.request(`/file-processing/jobs/${encodeURIComponent(id)}`, { method: 'DELETE' });
  }

  /** A single-use token that opens one live stream (GET /stream?token=...) without the API key in the URL. */
  async createStreamToken(): Promise<string> {
    const body = (await (await this.request('/stream-tokens', { method: 'POST' })).json()) as { token: string };
    return body.token;
  }

  /**
   * The jobs of the caller's project, newest first, when the server has the list endpoint
   * (GET /file-processing/jobs); null when it does not (404/405), so the caller falls back.
   */
  async listJobs(limit = 50): Promise<JobRecord[] | null> {
    try {
      const res = await this.request(`/file-processing/jobs?limit=${limit}`);
      const body = (await res.json()) as { jobs?: JobRecord[] } | JobRecord[];
      const jobs = Array.isArray(body) ? body : body.jobs;
      return Array.isArray(jobs) ? jobs : null;
    } catch (err) {
      if (err instanceof ApiProblem && (err.status === 404 || err.status === 405) && err.code !== 'JOB_NOT_FOUND') return null;
      throw err;
    }
  }
}

async function toProblem(res: Response): Promise<ApiProblem> {
  let body: Record<string, unknown> = {};
  try {
    body = (await res.json()) as Record<string, unknown>;
  } catch {
    /* not JSON */
  }
  const code = typeof body.code === 'string' ? body.code : `HTTP_${res.status}`;
  const detail = typeof body.detail === 'string' ? body.detail : res.statusText || `HTTP ${res.status}`;
  return new ApiProblem(res.status, code, detail, body);
}
