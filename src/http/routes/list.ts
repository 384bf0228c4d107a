/**
 * GET /file-processing/jobs: the jobs of the caller's project (the same organization and
 * project as the API key, like GET /file-processing/jobs/{jobId}), newest first, one page at
 * a time. The cursor is the position (created_at, job_id) of the last job of the page, so a
 * page never repeats or skips a job because jobs were created or deleted meanwhile.
 */
import type { FastifyInstance } from 'fastify';
import { type StorageHealth, withWaitReason } from '../../jobs/storage-health';
import { serializeJob } from '../../jobs/record';
import { JOB_STATUSES, type JobStatus, type StoredJob } from '../../jobs/types';
import { ApiError } from '../errors';
import { JSON_MEDIA_TYPE, problemResponses } from '../schemas';

export interface ListRoutesOptions {
  /** Every stored job (JobStore.list()). */
  list: () => Promise<StoredJob[]>;
  /** The storage fault queued jobs are waiting on, if any. */
  storageFault?: () => StorageHealth['current'];
}

export const LIST_DEFAULT_LIMIT = 100;
export const LIST_MAX_LIMIT = 1000;

interface ListQuery {
  limit?: number;
  status?: JobStatus;
  created_after?: string;
  created_before?: string;
  cursor?: string;
}

interface Position {
  created_at: string;
  job_id: string;
}

export function encodeCursor(p: Position): string {
  return Buffer.from(JSON.stringify([p.created_at, p.job_id])).toString('base64url');
}

function decodeCursor(cursor: string): Position {
  try {
    const [created_at, job_id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof created_at === 'string' && typeof job_id === 'string' && !Number.isNaN(Date.parse(created_at))) return { created_at, job_id };
  } catch {
    // fall through
  }
  throw new ApiError('INVALID_PARAMETER', 'cursor: not a cursor of this API (pass next_cursor unchanged)', { errors: [{ parameter: 'cursor', message: 'is not valid' }] });
}

/** Newest first; equal creation times by job id, so the order is total. */
function newerFirst(a: Position, b: Position): number {
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1;
  return a.job_id < b.job_id ? 1 : a.job_id > b.job_id ? -1 : 0;
}

function parseTime(value: string | undefined, parameter: string): number | null {
  if (value === undefined) return null;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new ApiError('INVALID_PARAMETER', `${parameter}: must be an RFC 3339 date-time`, { errors: [{ parameter, message: 'must be a date-time' }] });
  return t;
}

const pageSchema = {
  type: 'object',
  required: ['jobs', 'next_cursor'],
  properties: {
    jobs: { type: 'array', items: { $ref: 'Job#' } },
    next_cursor: { type: 'string', nullable: true, description: 'Pass as `cursor` for the next page; null on the last page' },
  },
} as const;

export async function listJobRoutes(app: FastifyInstance, opts: ListRoutesOptions): Promise<void> {
  app.get<{ Querystring: ListQuery }>(
    '/file-processing/jobs',
    {
      schema: {
        operationId: 'listJobs',
        tags: ['File processing'],
        summary: "List the project's jobs",
        description:
          "The job records of the API key's project (same organization and project), newest first (created_at, then job_id), `limit` per page. " +
          'Follow `next_cursor` until it is null; a job created after the first page was read does not appear in later pages, and no job is repeated or skipped. ' +
          'Finished jobs are listed until retention purges them.',
        security: [{ ApiKey: [] }],
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: LIST_MAX_LIMIT, default: LIST_DEFAULT_LIMIT, description: 'Most jobs per page' },
            status: { type: 'string', enum: [...JOB_STATUSES], description: 'Only jobs in this status' },
            created_after: { type: 'string', format: 'date-time', description: 'Only jobs created after this instant (exclusive)' },
            created_before: { type: 'string', format: 'date-time', description: 'Only jobs created before this instant (exclusive)' },
            cursor: { type: 'string', maxLength: 512, description: '`next_cursor` of the previous page (with the same filters)' },
          },
        },
        response: {
          200: { description: 'One page of jobs, newest first', content: { [JSON_MEDIA_TYPE]: { schema: pageSchema } } },
          ...problemResponses([400, 401, 429, 500]),
        },
      },
    },
    async (req, reply) => {
      const owner = req.owner;
      if (!owner) throw new ApiError('MISSING_API_KEY', 'The x-api-key header is required.');
      const q = req.query;
      const limit = q.limit ?? LIST_DEFAULT_LIMIT;
      const after = parseTime(q.created_after, 'created_after');
      const before = parseTime(q.created_before, 'created_before');
      const from = q.cursor === undefined ? null : decodeCursor(q.cursor);
      const matching = (await opts.list())
        .filter((j) => j.owner.organization_id === owner.organization_id && j.owner.project_id === owner.project_id)
        .filter((j) => !q.status || j.record.status === q.status)
        .filter((j) => {
          const t = Date.parse(j.record.created_at);
          return (after === null || t > after) && (before === null || t < before);
        })
        .map((j) => j.record)
        .filter((r) => !from || newerFirst(from, r) < 0)
        .sort(newerFirst);
      const page = matching.slice(0, limit);
      const fault = opts.storageFault?.() ?? null;
      const next = matching.length > limit ? encodeCursor(page[page.length - 1]!) : null;
      // The records serialized exactly as GET /file-processing/jobs/{jobId} answers them.
      return reply.type(JSON_MEDIA_TYPE).send(`{"jobs":[${page.map((r) => serializeJob(withWaitReason(r, fault))).join(',')}],"next_cursor":${JSON.stringify(next)}}`);
    },
  );
}
