/**
 * POST /stream-tokens: a short-lived, single-use token that opens one WebSocket stream
 * (GET /stream?token=...) for the caller's project, so that a browser never holds the API key
 * (src/streaming/tokens.ts, docs/streaming.md).
 */
import type { FastifyInstance } from 'fastify';
import type { Owner } from '../../jobs/service';
import type { StreamTokenStore } from '../../streaming/tokens';
import { ApiError } from '../errors';
import { JSON_MEDIA_TYPE, problemResponses } from '../schemas';

export interface StreamTokenRoutesOptions {
  tokens: StreamTokenStore;
}

export async function streamTokenRoutes(app: FastifyInstance, opts: StreamTokenRoutesOptions): Promise<void> {
  app.post(
    '/stream-tokens',
    {
      schema: {
        operationId: 'createStreamToken',
        tags: ['Streaming'],
        summary: 'Create a single-use stream token (for browsers)',
        description:
          `Returns a token valid for ${opts.tokens.ttlSec} s that opens one WebSocket stream (GET /stream?token=...) for this API key's project. ` +
          'Browsers cannot set headers on a WebSocket; the API key must never appear in a URL. See docs/streaming.md.',
        security: [{ ApiKey: [] }],
        response: {
          201: {
            description: 'The token',
            content: {
              [JSON_MEDIA_TYPE]: {
                schema: {
                  type: 'object',
                  required: ['token', 'expires_in', 'expires_at'],
                  properties: {
                    token: { type: 'string', description: 'Pass as the token query parameter of GET /stream, once' },
                    expires_in: { type: 'integer', description: 'Seconds until it expires' },
                    expires_at: { type: 'string', format: 'date-time' },
                  },
                },
              },
            },
          },
          ...problemResponses([401, 429, 500]),
        },
      },
    },
    async (req, reply) => {
      // The server's onRequest hook authenticated the key (with the failed-auth throttle and the per-key rate limit).
      const owner: Owner | undefined = req.owner;
      if (!owner) throw new ApiError('MISSING_API_KEY', 'The x-api-key header is required.');
      const issued = await opts.tokens.issue(owner);
      if (!issued) throw new ApiError('RATE_LIMITED', `Too many unused stream tokens for this API key; retry after ${opts.tokens.ttlSec} s.`, { retry_after: opts.tokens.ttlSec }, opts.tokens.ttlSec);
      return reply.code(201).header('cache-control', 'no-store').send(issued);
    },
  );
}
