/**
 * The public keys that verify the service's download requests (SPEC "Authentication" 2-3),
 * without authentication: file hosts fetch them.
 *
 *   GET /.well-known/jwks.json   RFC 7517 JWK Set (kty EC, crv P-521, kid, alg ES512, use sig)
 *   GET /verification-keys       the spec's form: key id + base64 DER (SPKI) per key
 *
 * Every published key is listed (the signing key first, then rotation keys).
 */
import type { FastifyInstance } from 'fastify';
import type { KeyRing } from '../../download/keys';
import { JSON_MEDIA_TYPE } from '../schemas';

export interface DownloadKeyRoutesOptions {
  keys: KeyRing;
}

const CACHE_CONTROL = 'public, max-age=300';

const jwkSchema = {
  type: 'object',
  required: ['kty', 'crv', 'x', 'y', 'kid', 'alg', 'use'],
  properties: {
    kty: { type: 'string', example: 'EC' },
    crv: { type: 'string', example: 'P-521' },
    x: { type: 'string' },
    y: { type: 'string' },
    kid: { type: 'string', description: 'Key id: the JWT header kid (RFC 7638 thumbprint of the key)' },
    alg: { type: 'string', example: 'ES512' },
    use: { type: 'string', example: 'sig' },
  },
} as const;

const verificationKeySchema = {
  type: 'object',
  required: ['kid', 'alg', 'public_key', 'signing'],
  properties: {
    kid: { type: 'string', description: 'Key id: the JWT header kid' },
    alg: { type: 'string', example: 'ES512' },
    public_key: { type: 'string', description: 'Base64 of the DER SubjectPublicKeyInfo (EC P-521)' },
    signing: { type: 'boolean', description: 'True for the key that signs now; others are published for rotation' },
  },
} as const;

export async function downloadKeyRoutes(app: FastifyInstance, opts: DownloadKeyRoutesOptions): Promise<void> {
  app.get(
    '/.well-known/jwks.json',
    {
      schema: {
        operationId: 'jwks',
        tags: ['Operations'],
        summary: 'Download verification keys (JWK Set)',
        description: 'The public keys of the ES512 JWT sent as X-Service-Request-Verification with every URL download. See docs/download.md.',
        response: {
          200: {
            description: 'JWK Set',
            content: { [JSON_MEDIA_TYPE]: { schema: { type: 'object', required: ['keys'], properties: { keys: { type: 'array', items: jwkSchema } } } } },
          },
        },
      },
    },
    async (_req, reply) => reply.header('cache-control', CACHE_CONTROL).send(opts.keys.jwks()),
  );
  app.get(
    '/verification-keys',
    {
      schema: {
        operationId: 'verificationKeys',
        tags: ['Operations'],
        summary: 'Download verification keys (key id + base64 DER)',
        description: 'The same keys as /.well-known/jwks.json in the form of the spec: key id and base64 DER (SPKI) public key.',
        response: {
          200: {
            description: 'Published keys, the signing key first',
            content: {
              [JSON_MEDIA_TYPE]: { schema: { type: 'object', required: ['keys'], properties: { keys: { type: 'array', items: verificationKeySchema } } } },
            },
          },
        },
      },
    },
    async (_req, reply) => reply.header('cache-control', CACHE_CONTROL).send({ keys: opts.keys.verificationKeys() }),
  );
}
