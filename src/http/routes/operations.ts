/**
 * Operations endpoints: GET /healthz (liveness), GET /readyz (readiness), GET /metrics (Prometheus).
 */
import type { FastifyInstance } from 'fastify';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import { ApiError, PROBLEM_CONTENT_TYPE } from '../errors';

export interface OperationRouteOptions {
  /** Installed model names. */
  listModels(): string[];
  /** Worker slots of this process (reported by /readyz). */
  workers: number;
  /** Why this process cannot take work now; empty when it can. */
  notReady(): Promise<string[]>;
  metrics: Registry;
}

export async function operationRoutes(app: FastifyInstance, opts: OperationRouteOptions): Promise<void> {
  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'healthz',
        tags: ['Operations'],
        summary: 'Liveness',
        response: { 200: { type: 'object', properties: { status: { type: 'string' } } } },
      },
    },
    async () => ({ status: 'ok' }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'readyz',
        tags: ['Operations'],
        summary: 'Readiness: storage open, workers running, models installed',
        response: {
          200: {
            type: 'object',
            properties: { status: { type: 'string' }, models: { type: 'array', items: { type: 'string' } }, workers: { type: 'integer' } },
          },
          503: { description: 'Not ready (SERVICE_UNAVAILABLE)', content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: 'Problem#' } } } },
        },
      },
    },
    async (_req, reply) => {
      const reasons = await opts.notReady();
      if (reasons.length) {
        throw new ApiError('SERVICE_UNAVAILABLE', `Not ready: ${reasons.join('; ')}.`, { reasons }, 5);
      }
      return reply.send({ status: 'ready', models: opts.listModels(), workers: opts.workers });
    },
  );
  app.get(
    '/metrics',
    { schema: { operationId: 'metrics', tags: ['Operations'], summary: 'Prometheus metrics', produces: ['text/plain'] } },
    async (_req, reply) => reply.type(opts.metrics.contentType).send(await opts.metrics.metrics()),
  );
}

/** Why the embedded data directory cannot take a write right now, or null. */
export async function dataDirProblem(dir: string): Promise<string | null> {
  const probe = join(dir, `.readyz-${process.pid}`);
  try {
    await writeFile(probe, 'ok');
    await rm(probe, { force: true });
    return null;
  } catch (e) {
    return `data directory ${dir} is not writable (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
  }
}
