/**
 * Other parties' errors in the catalogue's terms (src/errors.ts): Fastify's own error codes
 * and statuses, Node's HTTP parser codes, the operating system's storage errnos and the job
 * store's unavailability. This is the one place where a dependency's code becomes one of
 * ours; a new code is added to the catalogue first, then mapped here.
 */
import type { FastifyError } from 'fastify';
import { storageErrno } from '../errors';
import { BackendUnavailableError } from '../jobs/types';
import { ApiError } from './errors';
import { unsupportedMediaType } from './routes/jobs';

/** What a request's Content-Type was (some answers name it) and the error itself. */
type Translate = (contentType: string, err: FastifyError) => ApiError;

const payloadTooLarge: Translate = () => new ApiError('PAYLOAD_TOO_LARGE', 'The request body is too large.');
const invalidJson: Translate = () => new ApiError('INVALID_BODY', 'The body must be a JSON object: {"url": "..."}.');
// Names the type sent (e.g. audio/mp4), or asks for a body when none was sent.
const unsupported: Translate = (contentType) => unsupportedMediaType(contentType);

/** Fastify's error codes -> the catalogue. */
const FASTIFY_CODES = new Map<string, Translate>([
  ['FST_ERR_CTP_INVALID_MEDIA_TYPE', unsupported],
  ['FST_ERR_CTP_BODY_TOO_LARGE', payloadTooLarge],
  ['FST_ERR_CTP_EMPTY_JSON_BODY', invalidJson],
  ['FST_ERR_CTP_INVALID_JSON_BODY', invalidJson],
  ['FST_ERR_CTP_INVALID_CONTENT_LENGTH', () => new ApiError('INVALID_BODY', 'The Content-Length does not match the body.')],
]);

/** Fastify errors known only by their HTTP status (the router, plugins) -> the catalogue; other 4xx are INVALID_BODY. */
const FASTIFY_STATUSES = new Map<number, Translate>([
  [404, (_, err) => new ApiError('NOT_FOUND', err.message)],
  [405, (_, err) => new ApiError('METHOD_NOT_ALLOWED', err.message)],
  [413, payloadTooLarge],
  [415, unsupported],
  [429, (_, err) => new ApiError('RATE_LIMITED', err.message)],
  [503, () => new ApiError('SERVICE_UNAVAILABLE', 'The server is shutting down.')],
]);

/** Node's HTTP parser codes (requests refused before Fastify sees them) -> the catalogue; anything else is MALFORMED_REQUEST. */
const NODE_PARSER_CODES = new Map<string, (maxHeaderBytes: number, err: NodeJS.ErrnoException) => ApiError>([
  ['HPE_HEADER_OVERFLOW', (max, err) => new ApiError('HEADERS_TOO_LARGE', longRequestLine(err) ? `The request URL is too long: the request line and the headers must fit in ${max} bytes (shorten the query string).` : `The request headers exceed ${max} bytes.`)],
  ['ERR_HTTP_REQUEST_TIMEOUT', () => new ApiError('REQUEST_TIMEOUT', 'The request was not complete in time.')],
]);

/**
 * A fault of the job store, or undefined: an operating-system storage errno (STORAGE_ERRNOS)
 * or an unreachable backend means the service cannot take work now (no job is half-created).
 */
export function fromStoreFault(err: unknown): ApiError | undefined {
  const errno = storageErrno(err);
  if (errno && typeof (err as NodeJS.ErrnoException).syscall === 'string') {
    return new ApiError('SERVICE_UNAVAILABLE', `The job store cannot be written (${errno}); retry later.`, { retry_after: 30 }, 30);
  }
  if (err instanceof BackendUnavailableError) {
    return new ApiError('SERVICE_UNAVAILABLE', 'The job store is unreachable right now; retry later.', { retry_after: err.retryAfterSec }, err.retryAfterSec);
  }
  return undefined;
}

/** Fastify's own error (schema validation, body parsing, router) as the catalogue's ApiError. */
export function fromFastifyError(err: FastifyError, contentType: string): ApiError {
  const validation = fromValidationError(err);
  if (validation) return validation;
  const byCode = err.code === undefined ? undefined : FASTIFY_CODES.get(err.code);
  if (byCode) return byCode(contentType, err);
  const status = err.statusCode;
  const byStatus = status === undefined ? undefined : FASTIFY_STATUSES.get(status);
  if (byStatus) return byStatus(contentType, err);
  if (status && status >= 400 && status < 500) return new ApiError('INVALID_BODY', err.message);
  return new ApiError('INTERNAL_ERROR', 'An unexpected error occurred.');
}

/** Node's HTTP parser error (malformed request, header block over the limit, request timeout) as an ApiError. */
export function fromNodeParserError(err: NodeJS.ErrnoException, maxHeaderBytes: number): ApiError {
  const translate = err.code === undefined ? undefined : NODE_PARSER_CODES.get(err.code);
  return translate ? translate(maxHeaderBytes, err) : new ApiError('MALFORMED_REQUEST', 'The HTTP request is malformed.');
}

/** Whether the bytes the parser gave up on start with a request line over 8 KiB (a long query string, not many headers). */
function longRequestLine(err: NodeJS.ErrnoException): boolean {
  const raw = (err as { rawPacket?: unknown }).rawPacket;
  if (!Buffer.isBuffer(raw)) return false;
  const end = raw.indexOf('\r\n');
  return end < 0 ? raw.length > 8192 : end > 8192;
}

/** A schema validation failure: INVALID_BODY / INVALID_PARAMETER with one `errors` entry per rejected parameter. */
function fromValidationError(err: FastifyError): ApiError | undefined {
  const fe = err as FastifyError & { validation?: Array<Record<string, unknown>>; validationContext?: string };
  if (!fe.validation) return undefined;
  const inBody = fe.validationContext === 'body';
  const errors = fe.validation.map((v) => {
    const params = (v.params ?? {}) as Record<string, unknown>;
    const path = String(v.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
    const parameter = (params.missingProperty as string) ?? (params.additionalProperty as string) ?? (path || (inBody ? 'body' : fe.validationContext ?? ''));
    let message = String(v.message ?? 'is invalid');
    if (params.additionalProperty) message = `unknown ${inBody ? 'field' : 'parameter'}`;
    else if (params.missingProperty) message = 'is required';
    return { parameter, message };
  });
  const detail = errors.map((e) => `${e.parameter}: ${e.message}`).join('; ');
  return new ApiError(inBody ? 'INVALID_BODY' : 'INVALID_PARAMETER', detail, { errors });
}
