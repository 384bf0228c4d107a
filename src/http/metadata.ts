/**
 * User metadata of a job: a small string-to-string map given at creation (query parameter
 * `metadata` as a JSON object, or `metadata` in the JSON body of the URL method), stored on
 * the job and echoed in the record and the callback. Small on purpose: it travels with every
 * record read and every callback.
 */
import type { JobMetadata } from '../jobs/types';
import { ApiError } from './errors';

export const METADATA_LIMITS = { maxKeys: 16, keyPattern: '^[A-Za-z0-9_.:-]{1,64}$', maxValueChars: 512, maxJsonBytes: 4096 } as const;
const KEY_RE = new RegExp(METADATA_LIMITS.keyPattern);

/** JSON schema of the metadata object (body and OpenAPI; OpenAPI 3.0 has no propertyNames: checkMetadata checks the keys). */
export const metadataSchema = {
  type: 'object',
  maxProperties: METADATA_LIMITS.maxKeys,
  additionalProperties: { type: 'string', maxLength: METADATA_LIMITS.maxValueChars },
  description: `Your own key/value strings, echoed in the job record and the callback: at most ${METADATA_LIMITS.maxKeys} keys (letters, digits, _ . : -, up to 64 characters), values up to ${METADATA_LIMITS.maxValueChars} characters, ${METADATA_LIMITS.maxJsonBytes} bytes of JSON in all.`,
  example: { customer: 'c-1042', episode: '17' },
} as const;

/** Checks a metadata value (parsed JSON); throws INVALID_PARAMETER / INVALID_BODY naming what is wrong. */
export function checkMetadata(value: unknown, where: 'query' | 'body'): JobMetadata {
  const code = where === 'query' ? 'INVALID_PARAMETER' : 'INVALID_BODY';
  const fail = (message: string): never => {
    throw new ApiError(code, `metadata: ${message}`, { errors: [{ parameter: 'metadata', message }] });
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('must be a JSON object of strings');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > METADATA_LIMITS.maxKeys) fail(`at most ${METADATA_LIMITS.maxKeys} keys`);
  for (const [k, v] of entries) {
    if (!KEY_RE.test(k)) fail(`key ${JSON.stringify(k.slice(0, 80))} must be 1 to 64 letters, digits, _ . : -`);
    if (typeof v !== 'string') fail(`the value of ${k} must be a string`);
    if ((v as string).length > METADATA_LIMITS.maxValueChars) fail(`the value of ${k} is longer than ${METADATA_LIMITS.maxValueChars} characters`);
  }
  if (Buffer.byteLength(JSON.stringify(value)) > METADATA_LIMITS.maxJsonBytes) fail(`larger than ${METADATA_LIMITS.maxJsonBytes} bytes of JSON`);
  return Object.fromEntries(entries) as JobMetadata;
}

/** The metadata of a creation request: from the query (JSON text) or the URL method's body, not both. */
export function metadataOf(queryValue: string | undefined, bodyValue: unknown): JobMetadata | null {
  if (queryValue !== undefined && bodyValue !== undefined) {
    throw new ApiError('INVALID_PARAMETER', 'metadata: give it in the query or in the body, not both', { errors: [{ parameter: 'metadata', message: 'given twice' }] });
  }
  if (bodyValue !== undefined) return checkMetadata(bodyValue, 'body');
  if (queryValue === undefined) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(queryValue);
  } catch {
    throw new ApiError('INVALID_PARAMETER', 'metadata: must be a JSON object (URL-encoded), e.g. {"customer":"c-1042"}', {
      errors: [{ parameter: 'metadata', message: 'must be a JSON object' }],
    });
  }
  return checkMetadata(parsed, 'query');
}
