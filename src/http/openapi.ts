/**
 * The OpenAPI document (GET /openapi.json) and its UI (/docs): built by @fastify/swagger from the
 * route schemas, plus what the schemas cannot say (streamed audio bodies, the job callback).
 */
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { addCallbackDocs } from './openapi-callbacks';
import { AUDIO_MEDIA_TYPES } from './schemas';

interface OpenApiDoc {
  paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, unknown>; required?: boolean; description?: string } }>>;
  [k: string]: unknown;
}

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'auris file-processing API',
        version: '0.1.0',
        description:
          'Asynchronous audio analysis jobs (speech/music/other, arousal, voice gender per time step). ' +
          'Every error is an RFC 9457 application/problem+json body with a stable `code`; failed jobs carry `error.code`. See docs/api.md.',
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } } },
      tags: [{ name: 'File processing' }, { name: 'Models' }, { name: 'Operations' }],
    },
    refResolver: { buildLocalReference: (json, _base, _frag, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transformObject: (doc) => addCallbackDocs(addAudioBodies((doc as { openapiObject: OpenApiDoc }).openapiObject) as never),
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
}

/** GET /openapi.json (registered after the routes it documents). */
export function addOpenApiRoute(app: FastifyInstance): void {
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

/** The direct-upload bodies are streamed, not schema-validated; list them in the document. */
function addAudioBodies(doc: OpenApiDoc): OpenApiDoc {
  const op = doc.paths?.['/file-processing/jobs']?.post;
  if (op) {
    op.requestBody ??= {};
    op.requestBody.required = true;
    op.requestBody.description = 'URL method: JSON `{"url": ...}`. Direct upload: the raw audio bytes with their audio media type.';
    op.requestBody.content ??= {};
    for (const t of AUDIO_MEDIA_TYPES) op.requestBody.content[t] = { schema: { type: 'string', format: 'binary' } };
  }
  return doc;
}
