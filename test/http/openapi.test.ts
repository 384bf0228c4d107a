/**
 * /openapi.json validates as OpenAPI and lists every route, parameter, body and error response;
 * the docs UI is served; every catalogue code is documented.
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HTTP_ERROR_CODES, JOB_ERROR_CODES } from '../../src/errors';
import type { AurisServer } from '../../src/http/server';
import { AUDIO_MEDIA_TYPES } from '../../src/http/schemas';
import { FakeAnalyzer, startServer, tempDir } from './helpers';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, {
    operationId?: string;
    parameters?: Array<{ name: string; in: string; required?: boolean; schema?: Record<string, unknown> }>;
    requestBody?: { content: Record<string, unknown> };
    responses: Record<string, { content?: Record<string, { schema: unknown }>; headers?: Record<string, unknown> }>;
    security?: unknown[];
  }>>;
  components: { schemas: Record<string, { properties?: Record<string, { enum?: string[] }> }>; securitySchemes: Record<string, unknown> };
};

describe('OpenAPI document', () => {
  const dir = tempDir();
  let server: AurisServer;
  let doc: Doc;

  before(async () => {
    server = await startServer(dir.path, { analyzer: new FakeAnalyzer() });
    const res = await fetch(`${server.url}/openapi.json`);
    assert.equal(res.status, 200);
    doc = (await res.json()) as Doc;
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  it('validates with swagger-parser', async () => {
    await SwaggerParser.validate(structuredClone(doc) as never);
    assert.equal(doc.openapi, '3.0.3');
  });

  it('lists every route with its operation', () => {
    const ops = Object.entries(doc.paths).flatMap(([p, m]) => Object.entries(m).map(([verb, op]) => `${verb.toUpperCase()} ${p} ${op.operationId}`));
    for (const want of [
      'POST /file-processing/jobs createJob',
      'GET /file-processing/jobs/{jobId} getJob',
      'GET /file-processing/jobs/{jobId}/results getJobResults',
      'DELETE /file-processing/jobs/{jobId} deleteJob',
      'GET /healthz healthz',
      'GET /readyz readyz',
      'GET /metrics metrics',
      'GET /file-processing/jobs listJobs',
      'GET /file-processing/callback-secret getCallbackSecret',
      'GET /models listModels',
    ]) {
      assert.ok(ops.includes(want), `${want} in ${ops.join(', ')}`);
    }
  });

  it('documents every query parameter of job creation with its constraints', () => {
    const params = doc.paths['/file-processing/jobs']!.post!.parameters!;
    const byName = Object.fromEntries(params.map((p) => [p.name, p]));
    assert.deepEqual(Object.keys(byName).sort(), [
      'callback', 'channel', 'idempotency-key', 'include_raw_values', 'include_summary', 'include_transitions', 'max_speakers', 'metadata', 'models', 'num_speakers', 'output_period', 'volume_threshold',
    ]);
    assert.equal(byName.models!.required, true);
    for (const k of ['num_speakers', 'max_speakers']) assert.deepEqual([byName[k]!.schema!.minimum, byName[k]!.schema!.maximum], [1, 20], k);
    assert.equal(byName.output_period!.required, true);
    assert.equal(byName.output_period!.schema!.multipleOf, 64);
    for (const p of params) assert.equal(p.in, p.name === 'idempotency-key' ? 'header' : 'query');
  });

  it('documents both request bodies, the job record, the results and the API key', () => {
    const op = doc.paths['/file-processing/jobs']!.post!;
    const types = Object.keys(op.requestBody!.content);
    assert.ok(types.includes('application/json'));
    for (const t of AUDIO_MEDIA_TYPES) assert.ok(types.includes(t), t);
    assert.ok(op.responses['201']!.headers?.Location);
    assert.ok(doc.components.schemas.Job);
    assert.ok(doc.components.schemas.Problem);
    assert.ok(doc.paths['/file-processing/jobs/{jobId}/results']!.get!.responses['200']!.content!['application/json']);
    assert.deepEqual(doc.components.securitySchemes.ApiKey, { type: 'apiKey', in: 'header', name: 'x-api-key' });
    for (const [path, methods] of Object.entries(doc.paths)) {
      if (!path.startsWith('/file-processing/')) continue;
      for (const op2 of Object.values(methods)) assert.deepEqual(op2.security, [{ ApiKey: [] }], path);
    }
  });

  it('lists the error responses of each route as application/problem+json', () => {
    const want: Record<string, string[]> = {
      'post /file-processing/jobs': ['400', '401', '413', '415', '429', '500', '503'],
      'get /file-processing/jobs/{jobId}': ['401', '404', '429', '500'],
      'get /file-processing/jobs/{jobId}/results': ['401', '404', '409', '429', '500'],
      'delete /file-processing/jobs/{jobId}': ['401', '404', '429', '500'],
    };
    for (const [key, statuses] of Object.entries(want)) {
      const [verb, path] = key.split(' ') as [string, string];
      const responses = doc.paths[path]![verb]!.responses;
      for (const s of statuses) {
        assert.ok(responses[s]?.content?.['application/problem+json'], `${key} ${s}`);
      }
    }
  });

  it('enumerates every error code (problem codes and job failure codes)', () => {
    assert.deepEqual(doc.components.schemas.Problem!.properties!.code!.enum, HTTP_ERROR_CODES);
    const job = doc.components.schemas.Job as unknown as { properties: { error: { properties: { code: { enum: string[] } } } } };
    assert.deepEqual(job.properties.error.properties.code.enum, JOB_ERROR_CODES);
  });

  it('every catalogue code is documented in docs/api.md', () => {
    const md = readFileSync(join(resolve(__dirname, '..', '..', '..'), 'docs', 'api.md'), 'utf8');
    for (const code of [...HTTP_ERROR_CODES, ...JOB_ERROR_CODES]) assert.ok(md.includes(`\`${code}\``), `${code} in docs/api.md`);
  });

  it('serves the docs UI', async () => {
    const res = await fetch(`${server.url}/docs/`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /swagger/i);
  });

  it('documents the callback (body, signature and X-Auris headers), the record\'s callback state, label enums and an example result', () => {
    const op = doc.paths['/file-processing/jobs']!.post! as unknown as { callbacks: Record<string, Record<string, { post: { parameters: Array<{ name: string; in: string }>; requestBody: { content: Record<string, { schema: { $ref: string } }> } } }>> };
    const cb = op.callbacks.jobFinished!['{$request.query.callback}']!.post;
    assert.deepEqual(
      cb.parameters.map((p) => p.name).sort(),
      ['webhook-id', 'webhook-signature', 'webhook-timestamp', 'x-auris-attempt', 'x-auris-event-id', 'x-auris-event-type', 'x-auris-job-id'],
    );
    assert.ok(cb.parameters.every((p) => p.in === 'header'));
    assert.equal(cb.requestBody.content['application/json']!.schema.$ref, '#/components/schemas/Job');
    const job = doc.components.schemas.Job! as { required: string[]; properties: Record<string, { properties?: Record<string, { enum?: string[] }> }> };
    for (const f of ['metadata', 'callback', 'warnings']) assert.ok(job.required.includes(f), f);
    assert.deepEqual(job.properties.callback!.properties!.state!.enum, ['pending', 'delivered', 'failed', 'refused']);
    const results = doc.paths['/file-processing/jobs/{jobId}/results']!.get!.responses['200']!.content!['application/json']!.schema as {
      example: { result: { channels: Record<string, unknown> } };
      properties: { result: { properties: { channels: { additionalProperties: { properties: { time_series: { items: { properties: { results: { additionalProperties: { required: string[]; properties: { result: { enum: string[] } } } } } } } } } } } } };
    };
    const step = results.properties.result.properties.channels.additionalProperties.properties.time_series.items.properties.results.additionalProperties;
    assert.deepEqual(step.required, ['result', 'confidence']);
    for (const l of ['speech', 'music', 'other', 'silence', 'high', 'low', 'neutral', 'female', 'male', 'no_speech', 'unknown']) assert.ok(step.properties.result.enum.includes(l), l);
    assert.ok(results.example.result.channels['0']);
    const created = doc.paths['/file-processing/jobs']!.post!.responses['201']!.headers!;
    assert.ok(created['Idempotent-Replayed']);
    assert.ok(doc.paths['/file-processing/jobs']!.get!.responses['429']!.headers!['RateLimit']);
  });
});
