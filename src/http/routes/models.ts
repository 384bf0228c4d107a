/**
 * GET /models: the installed models as gRPC ListModels describes them (name, version,
 * labels, raw keys, summary keys, receptive field, lookahead), so REST clients can build
 * their UI and checks from the server instead of hard-coding them.
 */
import type { FastifyInstance } from 'fastify';
import { listModelsResponse } from '../../grpc/server';
import { ModelRegistry } from '../../inference/registry';
import { JSON_MEDIA_TYPE, problemResponses, type ResultVocabulary } from '../schemas';

export interface ModelRoutesOptions {
  modelsDir: string;
}

const modelSchema = {
  type: 'object',
  required: ['name', 'version', 'labels', 'raw_keys', 'summary_keys', 'receptive_field_ms', 'lookahead_ms'],
  properties: {
    name: { type: 'string', example: 'speech' },
    version: { type: 'string' },
    labels: { type: 'array', items: { type: 'string' }, description: 'Every value `result` can take for this model' },
    raw_keys: { type: 'array', items: { type: 'string' }, description: 'Keys of `raw` (include_raw_values), in model output order' },
    summary_keys: { type: 'array', items: { type: 'string' }, description: 'Keys of the summary fractions' },
    receptive_field_ms: { type: 'number', description: 'Audio that influences one step, ms' },
    lookahead_ms: { type: 'number', description: 'Audio needed after a step before its output is known, ms' },
    left_context_steps: { type: 'integer' },
    right_context_steps: { type: 'integer' },
    also_runs: { type: 'array', items: { type: 'string' }, description: 'Models run with it (e.g. speech gates gender)' },
    stream_lookahead_ms: { type: 'number', description: 'Lookahead of a stream asking for this model, the models it also runs included' },
    placeholder: { type: 'boolean', description: 'A model that honours the contract but means nothing (tests)' },
  },
} as const;

/** The labels, model names and keys the installed models can produce (empty when none can be read). */
export function installedVocabulary(modelsDir: string): ResultVocabulary {
  let models: ReturnType<typeof listModelsResponse>['models'];
  try {
    models = listModelsResponse({ registry: ModelRegistry.loadSync({ modelsDir }) }).models;
  } catch {
    models = [];
  }
  return {
    labels: models.flatMap((m) => m.labels),
    models: models.map((m) => m.name),
    rawKeys: models.flatMap((m) => m.raw_keys),
    summaryKeys: models.flatMap((m) => m.summary_keys),
  };
}

export async function modelRoutes(app: FastifyInstance, opts: ModelRoutesOptions): Promise<void> {
  let registry: ModelRegistry | null = null; // read once: models change only with a restart
  app.get(
    '/models',
    {
      schema: {
        operationId: 'listModels',
        tags: ['Models'],
        summary: 'List the installed models',
        description: 'The models a job or a stream may ask for, as gRPC ListModels gives them. No API key needed.',
        response: {
          200: {
            description: 'The models',
            content: {
              [JSON_MEDIA_TYPE]: {
                schema: {
                  type: 'object',
                  required: ['models', 'step_ms', 'sample_rate'],
                  properties: {
                    models: { type: 'array', items: modelSchema },
                    step_ms: { type: 'integer', description: 'One model step, ms: output_period is a multiple of it' },
                    sample_rate: { type: 'integer', description: 'Rate the models work at, Hz' },
                  },
                },
              },
            },
          },
          ...problemResponses([500]),
        },
      },
    },
    async () => {
      registry ??= ModelRegistry.loadSync({ modelsDir: opts.modelsDir });
      return listModelsResponse({ registry });
    },
  );
}
