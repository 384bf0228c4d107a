/**
 * The REST rendering of the error catalogue (src/errors.ts): every error is answered as
 * RFC 9457 `application/problem+json` with a stable `code`, the status and title of its row.
 * docs/errors.md lists the codes; the OpenAPI document enumerates them.
 */
import { AurisError, ERRORS, HTTP_ERROR_CODES, type HttpErrorCode } from '../errors';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export type ApiErrorCode = HttpErrorCode;

const httpRow = (code: HttpErrorCode): { http: number; message: string; title?: string } => ERRORS[code];

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
export class ApiError extends AurisError {
  declare readonly code: ApiErrorCode;
  readonly status: number;
  constructor(
    code: ApiErrorCode,
    detail: string,
    readonly extensions: Record<string, unknown> = {},
    /** Seconds, sent as Retry-After. */
    readonly retryAfter?: number,
  ) {
    super(code, detail);
    this.name = 'ApiError';
    this.status = httpRow(code).http;
  }

  toProblem(instance?: string): Problem {
    const p: Problem = {
      type: problemType(this.code),
      title: httpRow(this.code).title ?? httpRow(this.code).message,
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
    code: { type: 'string', enum: [...HTTP_ERROR_CODES], description: 'Stable machine-readable error code' },
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
