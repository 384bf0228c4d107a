/**
 * The job-finished callback in the OpenAPI document: a `callbacks` entry on createJob with
 * the body (the Job record) and every header the service sends (Standard Webhooks signature
 * headers and X-Auris-*), so generated clients and receivers know the contract.
 */
import { ATTEMPT_HEADER, EVENT_ID_HEADER, EVENT_TYPE_HEADER, JOB_ID_HEADER } from '../callbacks/dispatcher';
import { WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from '../callbacks/signing';

const CALLBACK_HEADERS: Array<[string, string, Record<string, unknown>]> = [
  [WEBHOOK_ID_HEADER, 'The event id, the same on every attempt (Standard Webhooks)', { type: 'string', format: 'uuid' }],
  [WEBHOOK_TIMESTAMP_HEADER, 'Unix time of this attempt, seconds; refuse it when more than 300 s from your clock', { type: 'string', pattern: '^[0-9]+$' }],
  [
    WEBHOOK_SIGNATURE_HEADER,
    '`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` keyed with the project secret (GET /file-processing/callback-secret); verify with the exported verifyCallback',
    { type: 'string', pattern: '^v1,' },
  ],
  [EVENT_ID_HEADER, 'The event id (= webhook-id): drop duplicates by it', { type: 'string', format: 'uuid' }],
  [ATTEMPT_HEADER, 'Attempt number, 1 to 1 + CALLBACK_RETRIES', { type: 'string', pattern: '^[0-9]+$' }],
  [JOB_ID_HEADER, 'The job id', { type: 'string', format: 'uuid' }],
  [EVENT_TYPE_HEADER, 'Always job.finished', { type: 'string', enum: ['job.finished'] }],
];

interface Doc {
  paths?: Record<string, Record<string, Record<string, unknown>>>;
}

export function addCallbackDocs<T extends Doc>(doc: T): T {
  const op = doc.paths?.['/file-processing/jobs']?.post;
  if (!op) return doc;
  op.callbacks = {
    jobFinished: {
      '{$request.query.callback}': {
        post: {
          summary: 'Job finished (succeeded or failed)',
          description:
            'POSTed once the job finishes, to the `callback` given at creation: the job record as it was when the job finished. ' +
            '2xx: delivered. 5xx, timeout (CALLBACK_TIMEOUT_MS, 10 s) or a network error: retried up to CALLBACK_RETRIES (3) times with doubling delays; other statuses are final. ' +
            'The outcome is on the job record (`callback.state`).',
          parameters: CALLBACK_HEADERS.map(([name, description, schema]) => ({ name, in: 'header', required: true, description, schema })),
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Job' } } } },
          responses: {
            '2XX': { description: 'Delivered' },
            '5XX': { description: 'Retried' },
            default: { description: 'Final: not retried (callback.state failed)' },
          },
        },
      },
    },
  };
  return doc;
}
