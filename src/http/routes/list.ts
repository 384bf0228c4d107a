/**
 * GET /file-processing/jobs: the jobs of the caller's project (the same organization and
 * project as the API key, like GET /file-processing/jobs/{jobId}), newest first. Used by
 * the web console's jobs list; any client may use it.
 */
import type { FastifyInstance } from 'fastify';
import { serializeJob } from '../../jobs/record';
import { JOB_STATUSES, type JobStatus, type StoredJob } from '../../jobs/types';
import { ApiError } from '../errors';
import { JSON_MEDIA_TYPE, problemResponses } from '../schemas';

export interface ListRoutesOptions {
  /** Every stored job (JobStore.list()). */
  list: () => Promise<StoredJob[]>;
}

export const LIST_DEFAULT_LIMIT = 100;
export const LIST_MAX_LIMIT = 1000;

export async function listJobRoutes(app: FastifyInstance, opts: ListRoutesOptions): Promise<void> {
  app.get<{ Querystring: { limit?: number; status?: JobStatus } }>(
    '/file-processing/jobs',
    {
      schema: {
        operationId: 'listJobs',
        tags: ['File processing'],
        summary: "List the project's jobs",
        description:
          "The job records of the API key's project (same organization and project), newest first (by created_at), at most `limit`. " +
          'Finished jobs are listed until retention purges them.',
        security: [{ ApiKey: [] }],
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: LIST_MAX_LIMIT, default: LIST_DEFAULT_LIMIT, description: 'Most jobs returned' },
            status: { type: 'string', enum: [...JOB_STATUSES], description: 'Only jobs in this status' },
          },
        },
        response: {
          200: {
            description: 'The jobs, newest first',
            content: {
              [JSON_MEDIA_TYPE]: {
                schema: {
                  type: 'object',
                  required: ['jobs'],
                  properties: { jobs: { type: 'array', items: { $ref: 'Job#' } } },
                },
              },
            },
          },
          ...problemResponses([400, 401, 429, 500]),
        },
      },
    },
    async (req, reply) => {
      const owner = req.owner;
      if (!owner) throw new ApiError('MISSING_API_KEY', 'The x-api-key header is required.');
      const limit = req.query.limit ?? LIST_DEFAULT_LIMIT;
      const status = req.query.status;
      const jobs = (await opts.list())
        .filter((j) => j.owner.organization_id === owner.organization_id && j.owner.project_id === owner.project_id)
        .filter((j) => !status || j.record.status === status)
        .sort((a, b) => (a.record.created_at < b.record.created_at ? 1 : a.record.created_at > b.record.created_at ? -1 : a.record.job_id < b.record.job_id ? 1 : -1))
        .slice(0, limit);
      // The records serialized exactly as GET /file-processing/jobs/{jobId} answers them.
      return reply.type(JSON_MEDIA_TYPE).send(`{"jobs":[${jobs.map((j) => serializeJob(j.record)).join(',')}]}`);
    },
  );
}
