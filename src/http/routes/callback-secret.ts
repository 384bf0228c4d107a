/**
 * GET /file-processing/callback-secret: the signing secret of the caller's project, to verify
 * job-finished callbacks (Standard Webhooks; verifyCallback in the package, docs/api.md).
 */
import type { FastifyInstance } from 'fastify';
import type { CallbackSecrets } from '../../callbacks/signing';
import { ApiError } from '../errors';
import { JSON_MEDIA_TYPE, problemResponses } from '../schemas';

export async function callbackSecretRoutes(app: FastifyInstance, opts: { secrets: CallbackSecrets }): Promise<void> {
  app.get(
    '/file-processing/callback-secret',
    {
      schema: {
        operationId: 'getCallbackSecret',
        tags: ['File processing'],
        summary: "The project's callback signing secret",
        description:
          'Every callback is signed with this secret (headers webhook-id, webhook-timestamp, webhook-signature: ' +
          '`v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the base64-decoded part after `whsec_`). ' +
          'Any API key of the project may read it; it changes only when the operator changes CALLBACK_SECRETS or the secret file.',
        security: [{ ApiKey: [] }],
        response: {
          200: {
            description: 'The secret',
            content: {
              [JSON_MEDIA_TYPE]: {
                schema: {
                  type: 'object',
                  required: ['secret', 'scheme', 'tolerance_sec'],
                  properties: {
                    secret: { type: 'string', example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
                    scheme: { type: 'string', enum: ['standard-webhooks'] },
                    tolerance_sec: { type: 'integer', description: 'Replay window the verifier should apply to webhook-timestamp, s' },
                  },
                },
              },
            },
          },
          ...problemResponses([401, 429]),
        },
      },
    },
    async (req, reply) => {
      if (!req.owner) throw new ApiError('MISSING_API_KEY', 'The x-api-key header is required.');
      void reply.header('cache-control', 'no-store');
      return { secret: opts.secrets.secretFor(req.owner), scheme: 'standard-webhooks', tolerance_sec: 300 };
    },
  );
}
