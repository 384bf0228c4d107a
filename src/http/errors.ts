/**
 * The one error catalogue of the REST API. Every error is answered as RFC 9457
 * `application/problem+json` with a stable `code`; job failure codes (a failed job's
 * `error.code`) live in src/jobs/errors.ts and are listed with these in docs/api.md
 * and in the OpenAPI document.
 */
import { JOB_ERROR_CODES } from '../jobs/errors';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export const API_ERRORS = {
  INVALID_PARAMETER: { status: 400, title: 'Invalid parameter' },
  UNKNOWN_MODEL: { status: 400, title: 'Unknown model' },
  INVALID_BODY: { status: 400, title: 'Invalid request body' },
  MALFORMED_REQUEST: { status: 400, title: 'Malformed HTTP request' },
  MISSING_API_KEY: { status: 401, title: 'Missing API key' },
  INVALID_API_KEY: { status: 401, title: 'Invalid API key' },
  JOB_NOT_FOUND: { status: 404, title: 'Job not found' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request timeout' },
  RESULTS_NOT_READY: { status: 409, title: 'Results not ready' },
  JOB_FAILED: { status: 409, title: 'Job failed' },
  IDEMPOTENCY_CONFLICT: { status: 409, title: 'Idempotency-Key reused for another request' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  TOO_MANY_AUTH_FAILURES: { status: 429, title: 'Too many failed authentications' },
  TOO_MANY_ACTIVE_JOBS: { status: 429, title: 'Too many unfinished jobs' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request header fields too large' },
  INTERNAL_ERROR: { status: 500, title: 'Internal error' },
  SERVICE_UNAVAILABLE: { status: 503, title: 'Service unavailable' },
} as const;

export type ApiErrorCode = keyof typeof API_ERRORS;

/** The problem type URI of a code (RFC 9457 `type`). */
export const problemType = (code: string): string => `urn:auris:problem:${code.toLowerCase().replace(/_/g, '-')}`;

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  code: string;
  [extension: string]: unknown;
}

/** An error answered as a problem. `extensions` become extra members (e.g. `errors`, `valid_models`). */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  constructor(
    readonly code: ApiErrorCode,
    detail: string,
    readonly extensions: Record<string, unknown> = {},
    /** Seconds, sent as Retry-After. */
    readonly retryAfter?: number,
  ) {
    super(detail);
    this.status = API_ERRORS[code].status;
  }

  toProblem(instance?: string): Problem {
    const p: Problem = {
      type: problemType(this.code),
      title: API_ERRORS[this.code].title,
      status: this.status,
      detail: this.message,
      code: this.code,
      ...this.extensions,
    };
    if (instance) p.instance = instance;
    return p;
  }
}

/** JSON schema of a problem body (used by every route's error responses). */
export const problemSchema = {
  $id: 'Problem',
  type: 'object',
  description: 'RFC 9457 problem details with a stable `code`.',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string', description: 'URI of the problem type: urn:auris:problem:<code in kebab case>' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string', description: 'Human-readable explanation of this occurrence' },
    instance: { type: 'string', description: 'The request path' },
    code: { type: 'string', enum: [...Object.keys(API_ERRORS)], description: 'Stable machine-readable error code' },
    errors: {
      type: 'array',
      description: 'INVALID_PARAMETER / INVALID_BODY: one entry per rejected parameter',
      items: {
        type: 'object',
        required: ['parameter', 'message'],
        properties: { parameter: { type: 'string' }, message: { type: 'string' } },
      },
    },
    valid_models: { type: 'array', items: { type: 'string' }, description: 'UNKNOWN_MODEL: the models this server has' },
    unknown_models: { type: 'array', items: { type: 'string' }, description: 'UNKNOWN_MODEL: the names that are not models' },
    job_status: { type: 'string', description: 'RESULTS_NOT_READY: the job status' },
    job_error: {
      type: 'object',
      description: 'JOB_FAILED: the error of the job',
      properties: { code: { type: 'string' }, message: { type: 'string' } },
    },
    retry_after: { type: 'integer', description: 'RATE_LIMITED / TOO_MANY_ACTIVE_JOBS / RESULTS_NOT_READY: seconds to wait (also the Retry-After header)' },
    limit_bytes: { type: 'integer', description: 'PAYLOAD_TOO_LARGE: the limit' },
    supported_media_types: { type: 'array', items: { type: 'string' }, description: 'UNSUPPORTED_MEDIA_TYPE: accepted Content-Types' },
  },
  additionalProperties: true,
} as const;

/** Every code in one list (API problems and job failures), for docs and tests. */
export function errorCatalogue(): Array<{ code: string; kind: 'problem' | 'job'; status?: number; title: string }> {
  return [
    ...Object.entries(API_ERRORS).map(([code, e]) => ({ code, kind: 'problem' as const, status: e.status, title: e.title })),
    ...Object.entries(JOB_ERROR_CODES).map(([code, title]) => ({ code, kind: 'job' as const, title })),
  ];
}
