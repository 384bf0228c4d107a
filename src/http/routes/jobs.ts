/**
 * The file-processing job endpoints (SPEC "Endpoints").
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import type { Config } from '../../config';
import { storageErrno } from '../../errors';
import { type AddressPolicy, literalRefusal, parseAllowlist } from '../../download/ssrf';
import { serializeJob } from '../../jobs/record';
import { type StorageHealth, withWaitReason } from '../../jobs/storage-health';
import { type CreatedJob, IdempotencyConflictError, type JobService, type NewJobExtras, type Owner } from '../../jobs/service';
import { IDEMPOTENCY_KEY_RE } from '../../jobs/idempotency';
import { metadataOf } from '../metadata';
import { installedVocabulary } from './models';
import { BackendUnavailableError, BlobTooLargeError, type JobParams, type JobRequest } from '../../jobs/types';
import { jobRequestOf } from '../../jobs/request';
import { type AnalysisRequest, checkSpeakerCounts } from '../../analysis/options';
import { ApiError } from '../errors';
import {
  AUDIO_MEDIA_TYPES,
  createJobQuerySchema,
  JSON_MEDIA_TYPE,
  jobIdParamsSchema,
  problemResponses,
  resultsSchema,
  urlBodySchema,
} from '../schemas';

declare module 'fastify' {
  interface FastifyRequest {
    owner?: Owner;
  }
}

export interface JobRoutesOptions {
  config: Config;
  service: JobService;
  listModels: () => string[];
  volumeRange: { min: number; max: number };
  /** The storage fault jobs are waiting on (the worker's StorageHealth), if any. */
  storageFault?: () => StorageHealth['current'];
}

/** The query string of POST /file-processing/jobs once the schema checked it: the client's JobParams, models as one comma list. */
type CreateQuery = Omit<JobParams, 'models'> & { models: string; metadata?: string };

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const security = [{ ApiKey: [] }];
const TAG = ['File processing'];

/** The analysis a creation query asks for (`models`: its de-duplicated list). */
function analysisRequestOfQuery(q: CreateQuery, models: string[]): AnalysisRequest {
  const analysis: AnalysisRequest = {
    models,
    outputPeriodMs: q.output_period,
    includeSummary: q.include_summary ?? false,
    includeTransitions: q.include_transitions ?? false,
    includeRaw: q.include_raw_values ?? false,
  };
  if (q.channel !== undefined) analysis.channel = q.channel;
  if (q.volume_threshold !== undefined) analysis.volumeThreshold = q.volume_threshold;
  if (q.num_speakers !== undefined) analysis.numSpeakers = q.num_speakers;
  if (q.max_speakers !== undefined) analysis.maxSpeakers = q.max_speakers;
  return analysis;
}

function ownerOf(req: FastifyRequest): Owner {
  if (!req.owner) throw new ApiError('MISSING_API_KEY', 'The x-api-key header is required.');
  return req.owner;
}

function mediaType(req: FastifyRequest): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** What the job routes' handlers share. */
interface JobRoutesContext extends JobRoutesOptions {
  callbackPolicy: AddressPolicy;
}

type CreateRequest = FastifyRequest<{ Querystring: CreateQuery; Body: unknown }>;
type JobIdRequest = FastifyRequest<{ Params: { jobId: string } }>;

export async function jobRoutes(app: FastifyInstance, opts: JobRoutesOptions): Promise<void> {
  const ctx: JobRoutesContext = { ...opts, callbackPolicy: parseAllowlist(opts.config.download.urlAllowlist) };
  // Audio bodies are not parsed: the handler streams them to the blob store under the size cap.
  app.addContentTypeParser([...AUDIO_MEDIA_TYPES], (_req, payload, done) => done(null, payload));

  app.post<{ Querystring: CreateQuery; Body: unknown }>(
    '/file-processing/jobs',
    { preValidation: plainIntegers(['output_period', 'channel', 'num_speakers', 'max_speakers']), schema: createJobSchema(opts) },
    (req, reply) => createJob(ctx, req, reply),
  );
  app.get<{ Params: { jobId: string } }>('/file-processing/jobs/:jobId', { schema: getJobSchema }, async (req, reply) => {
    const job = await findJob(ctx.service, ownerOf(req), req.params.jobId);
    return reply.type(JSON_MEDIA_TYPE).send(serializeJob(withWaitReason(job.record, ctx.storageFault?.() ?? null)));
  });
  app.get<{ Params: { jobId: string } }>('/file-processing/jobs/:jobId/results', { schema: getResultsSchema(opts.config) }, (req, reply) =>
    sendResults(ctx, req, reply),
  );
  app.delete<{ Params: { jobId: string } }>('/file-processing/jobs/:jobId', { schema: deleteJobSchema }, async (req, reply) => {
    const id = req.params.jobId;
    if (!UUID_RE.test(id) || !(await ctx.service.delete(ownerOf(req), id))) throw notFound(id);
    return reply.code(204).send();
  });
}

/**
 * POST /file-processing/jobs in named stages (as fastify's lib/handleRequest.js): the job's
 * request from the query -> the job from the body (URL or upload) -> 201 with the record.
 * One error exit: creationError().
 */
async function createJob(ctx: JobRoutesContext, req: CreateRequest, reply: FastifyReply): Promise<FastifyReply> {
  try {
    const owner = ownerOf(req);
    const request = jobRequestOfQuery(ctx, req.query);
    const created = await createFromBody(ctx, req, owner, request);
    return sendCreated(reply, created);
  } catch (err) {
    throw creationError(ctx.config, req, err);
  }
}

/** The record's request from the (schema-checked) query: finite numbers, installed models, an acceptable callback. */
function jobRequestOfQuery(ctx: JobRoutesContext, q: CreateQuery): JobRequest {
  // Ajv coerces "1e309" / "Infinity" to Infinity and lets it through integer/range checks.
  for (const [k, v] of Object.entries(q)) {
    if (typeof v === 'number' && !Number.isFinite(v)) {
      throw new ApiError('INVALID_PARAMETER', `${k}: must be a finite number`, { errors: [{ parameter: k, message: 'must be a finite number' }] });
    }
  }
  const models = [...new Set(q.models.split(','))];
  const valid = ctx.listModels();
  const unknown = models.filter((m) => !valid.includes(m));
  if (unknown.length) {
    throw new ApiError('UNKNOWN_MODEL', `Unknown model(s): ${unknown.join(', ')}. Valid models: ${valid.join(', ') || '(none installed)'}.`, {
      unknown_models: unknown,
      valid_models: valid,
    });
  }
  const analysis = analysisRequestOfQuery(q, models);
  try {
    checkSpeakerCounts(models, analysis.numSpeakers, analysis.maxSpeakers);
  } catch (e) {
    const message = (e as Error).message;
    const parameter = message.split(' ')[0]!;
    throw new ApiError('INVALID_PARAMETER', message, { errors: [{ parameter, message }] });
  }
  const request = jobRequestOf(analysis, q.callback ?? null);
  if (request.callback !== null) {
    checkHttpUrl(request.callback, 'callback', 'INVALID_PARAMETER');
    checkCallbackHost(request.callback, ctx.callbackPolicy);
  }
  return request;
}

/** The job of the body: `{"url": ...}` as JSON, or the audio bytes; with the Idempotency-Key and metadata. */
async function createFromBody(ctx: JobRoutesContext, req: CreateRequest, owner: Owner, request: JobRequest): Promise<CreatedJob> {
  const type = mediaType(req);
  const idempotencyKey = idempotencyKeyOf(req);
  const urlBody = type === JSON_MEDIA_TYPE ? (req.body as { url: string; metadata?: unknown }) : null;
  const extras: NewJobExtras = { metadata: metadataOf(req.query.metadata, urlBody?.metadata), idempotencyKey, admit: () => admitNewJob(ctx, owner) };
  if (urlBody) {
    checkHttpUrl(urlBody.url, 'url', 'INVALID_BODY');
    checkFileUrl(urlBody.url, ctx.callbackPolicy);
    return createOr409(() => ctx.service.create(owner, request, { method: 'url', url: urlBody.url }, extras));
  }
  if ((AUDIO_MEDIA_TYPES as readonly string[]).includes(type) && req.body) {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > ctx.config.limits.maxUploadBytes) throw tooLarge(ctx.config);
    const created = await createOr409(() => ctx.service.create(owner, request, { method: 'upload', contentType: type, body: req.body as Readable }, extras));
    if (created.job.record.source.size_bytes === 0 && !created.replayed) {
      await ctx.service.delete(owner, created.job.record.job_id);
      throw new ApiError('INVALID_BODY', 'The uploaded audio is empty.');
    }
    return created;
  }
  throw unsupportedMediaType(type);
}

/** The unfinished-jobs limit of the key: applies to a job about to be created, not to an idempotent replay. */
async function admitNewJob(ctx: JobRoutesContext, owner: Owner): Promise<void> {
  const active = await ctx.service.activeJobsOfKey(owner.key_id);
  const limit = ctx.config.limits.maxActiveJobsPerKey;
  if (active >= limit) {
    throw new ApiError('TOO_MANY_ACTIVE_JOBS', `This API key has ${active} unfinished jobs, the limit is ${limit}; wait for some to finish.`, { retry_after: 5 }, 5);
  }
}

function sendCreated(reply: FastifyReply, { job, replayed }: CreatedJob): FastifyReply {
  // A replay answers as the first request did (201, same job), marked as a replay.
  if (replayed) void reply.header('idempotent-replayed', 'true');
  return reply.code(201).header('location', `/file-processing/jobs/${job.record.job_id}`).type(JSON_MEDIA_TYPE).send(serializeJob(job.record));
}

/**
 * The error answer of a failed creation. A refusal (problem answer, 503 of an unavailable
 * backend or an unwritable data directory) lets an unread upload flow to nowhere first, so the
 * client can read the answer; an upload that broke off is INVALID_BODY; anything else passes (500).
 */
function creationError(config: Config, req: CreateRequest, err: unknown): unknown {
  const error = err instanceof BlobTooLargeError ? tooLarge(config) : err;
  // A storage errno (src/errors.ts STORAGE_ERRNOS): the data directory cannot be written: 503 (server.ts), not the client's fault.
  const storageFault = storageErrno(error) !== undefined;
  if (error instanceof ApiError || error instanceof BackendUnavailableError || storageFault) {
    drain(req);
    return error;
  }
  if (isStream(req.body) && (req.raw.destroyed || !req.raw.complete)) {
    return new ApiError('INVALID_BODY', 'The upload was interrupted before the body was complete.');
  }
  return error;
}

async function sendResults(ctx: JobRoutesContext, req: JobIdRequest, reply: FastifyReply): Promise<FastifyReply> {
  const owner = ownerOf(req);
  const id = req.params.jobId;
  if (!UUID_RE.test(id)) throw notFound(id);
  const r = await ctx.service.results(owner, id);
  switch (r.state) {
    case 'missing':
      throw notFound(id);
    case 'failed':
      throw new ApiError('JOB_FAILED', `Job ${id} failed (${r.job.record.error?.code}): ${r.job.record.error?.message}`, {
        job_status: r.job.record.status,
        job_error: r.job.record.error,
      });
    case 'not_ready':
      throw new ApiError('RESULTS_NOT_READY', `Job ${id} is ${r.job.record.status}; results are not ready yet.`, { job_status: r.job.record.status, retry_after: 1 }, 1);
    case 'ready':
      return reply.type(JSON_MEDIA_TYPE).header('content-length', r.size).send(r.stream);
  }
}

function createJobSchema({ config, volumeRange }: JobRoutesOptions) {
  return {
    operationId: 'createJob',
    tags: TAG,
    summary: 'Create a job',
    description:
      'Creates a job for one audio file. URL method: `Content-Type: application/json` with `{"url": "..."}`. ' +
      `Direct upload: the raw bytes with the audio media type (${AUDIO_MEDIA_TYPES.join(', ')}), at most ${config.limits.maxUploadBytes} bytes.`,
    security,
    querystring: createJobQuerySchema(config, volumeRange),
    headers: {
      type: 'object',
      properties: {
        'idempotency-key': {
          type: 'string',
          description:
            'Makes the creation safe to retry: the same key with the same request (parameters, metadata and body) within 24 h returns the job it created (201, `Idempotent-Replayed: true`); with a different request, 409 IDEMPOTENCY_CONFLICT.',
          example: '5f8c1a52-7a0e-4b1e-9d0c-3a9f2e1c7b44',
        },
      },
    },
    body: { content: { [JSON_MEDIA_TYPE]: { schema: urlBodySchema } } },
    response: {
      201: {
        description: 'The job was created and queued. Location: the job URL.',
        headers: {
          Location: { type: 'string', description: 'Path of the job' },
          'Idempotent-Replayed': { type: 'string', enum: ['true'], description: 'Present when an earlier request with the same Idempotency-Key created the job' },
        },
        content: { [JSON_MEDIA_TYPE]: { schema: { $ref: 'Job#' } } },
      },
      ...problemResponses([400, 401, 409, 413, 415, 429, 500, 503]),
    },
  };
}

const getJobSchema = {
  operationId: 'getJob',
  tags: TAG,
  summary: 'Get a job',
  description: 'The job record. Poll it, or pass `callback` at creation to be notified with this same body.',
  security,
  params: jobIdParamsSchema,
  response: {
    200: { description: 'The job', content: { [JSON_MEDIA_TYPE]: { schema: { $ref: 'Job#' } } } },
    ...problemResponses([401, 404, 429, 500]),
  },
};

function getResultsSchema(config: Config) {
  return {
    operationId: 'getJobResults',
    tags: TAG,
    summary: 'Get the results of a job',
    description:
      'The results envelope once the job has succeeded. While the job is queued or processing: 409 RESULTS_NOT_READY with Retry-After; after a failure: 409 JOB_FAILED with the job error.',
    security,
    params: jobIdParamsSchema,
    response: {
      200: { description: 'The results envelope', content: { [JSON_MEDIA_TYPE]: { schema: resultsSchema(installedVocabulary(config.modelsDir)) } } },
      ...problemResponses([401, 404, 409, 429, 500]),
    },
  };
}

const deleteJobSchema = {
  operationId: 'deleteJob',
  tags: TAG,
  summary: 'Delete a job',
  description: 'Deletes the job, its uploaded audio and its results, whatever its status (a running job is stopped). No callback is sent for a deleted job.',
  security,
  params: jobIdParamsSchema,
  response: {
    204: { description: 'Deleted', type: 'null' },
    ...problemResponses([401, 404, 429, 500]),
  },
};

/**
 * Integer parameters as plain decimal digits only: the schema's type coercion would also take
 * `0x400`, `1.024e3`, `+64` or ` 64` (JavaScript's Number()), which no one means.
 */
function plainIntegers(names: readonly string[]) {
  return async (req: FastifyRequest): Promise<void> => {
    const q = req.query as Record<string, unknown>;
    const bad = names.filter((n) => q[n] !== undefined && !(typeof q[n] === 'string' && /^[0-9]{1,10}$/.test(q[n] as string)));
    if (bad.length) {
      drain(req);
      const errors = bad.map((parameter) => ({ parameter, message: 'must be a plain decimal integer (digits only)' }));
      throw new ApiError('INVALID_PARAMETER', errors.map((e) => `${e.parameter}: ${e.message}`).join('; '), { errors });
    }
  };
}

/** The Idempotency-Key header, if any: 1 to 255 visible ASCII characters. */
function idempotencyKeyOf(req: FastifyRequest): string | undefined {
  const raw = req.headers['idempotency-key'];
  if (raw === undefined) return undefined;
  const key = Array.isArray(raw) ? raw[0]! : raw;
  if (!IDEMPOTENCY_KEY_RE.test(key)) {
    throw new ApiError('INVALID_PARAMETER', 'Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID is a good choice).', {
      errors: [{ parameter: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters' }],
    });
  }
  return key;
}

async function createOr409(create: () => Promise<CreatedJob>): Promise<CreatedJob> {
  try {
    return await create();
  } catch (err) {
    if (err instanceof IdempotencyConflictError) {
      throw new ApiError(
        'IDEMPOTENCY_CONFLICT',
        `This Idempotency-Key was used within the last 24 h for a different request (job ${err.jobId}); use a new key for a new request.`,
        { job_id: err.jobId },
      );
    }
    throw err;
  }
}

async function findJob(service: JobService, owner: Owner, id: string) {
  if (!UUID_RE.test(id)) throw notFound(id);
  const job = await service.get(owner, id);
  if (!job) throw notFound(id);
  return job;
}

const notFound = (id: string): ApiError => new ApiError('JOB_NOT_FOUND', `No job ${id} in this project.`);

const tooLarge = (config: Config): ApiError =>
  new ApiError('PAYLOAD_TOO_LARGE', `The upload is larger than ${config.limits.maxUploadBytes} bytes; use the URL method for larger files.`, {
    limit_bytes: config.limits.maxUploadBytes,
  });

export function unsupportedMediaType(type: string): ApiError {
  return new ApiError(
    'UNSUPPORTED_MEDIA_TYPE',
    type
      ? `Content-Type ${type} is not accepted: send application/json with {"url": ...} or the audio bytes with an audio media type.`
      : 'A body is required: application/json with {"url": ...} or the audio bytes with an audio media type.',
    { supported_media_types: [JSON_MEDIA_TYPE, ...AUDIO_MEDIA_TYPES] },
  );
}

function checkHttpUrl(value: string, parameter: string, code: 'INVALID_PARAMETER' | 'INVALID_BODY'): void {
  let ok = false;
  try {
    const u = new URL(value);
    ok = (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    ok = false;
  }
  if (!ok) {
    throw new ApiError(code, `${parameter} must be an absolute http or https URL.`, {
      errors: [{ parameter, message: 'must be an absolute http or https URL' }],
    });
  }
}

/**
 * A callback whose host is an address literal that the SSRF guard would refuse (metadata,
 * loopback, private ... and not allowlisted) is refused at creation, not only when sent.
 * Host names are checked when the callback is sent (they may resolve differently then).
 */
function checkCallbackHost(value: string, policy: AddressPolicy): void {
  if (!literalRefusal(new URL(value), policy)) return;
  const message = 'the host is not allowed (not a public address, and not on the allowlist)';
  throw new ApiError('INVALID_PARAMETER', `callback: ${message}.`, { errors: [{ parameter: 'callback', message }] });
}

/**
 * A file URL with a user name or password, or whose host is an address literal the SSRF guard
 * would refuse (metadata, loopback, private ... and not allowlisted), is refused at creation as
 * callbacks are; host names are checked when the file is downloaded.
 */
function checkFileUrl(value: string, policy: AddressPolicy): void {
  const u = new URL(value);
  let message: string | null = null;
  if (u.username || u.password) message = 'must not carry a user name or password';
  else if (literalRefusal(u, policy)) message = 'the host is not allowed (not a public address, and not on the allowlist)';
  if (message) throw new ApiError('INVALID_BODY', `url: ${message}.`, { errors: [{ parameter: 'url', message }] });
}

const isStream = (body: unknown): body is Readable => !!body && typeof (body as Readable).resume === 'function';

/** Lets an unread upload body flow to nowhere so the client can read the error answer. */
function drain(req: FastifyRequest): void {
  if (isStream(req.body)) req.body.resume();
}

