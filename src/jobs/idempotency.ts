/**
 * Idempotent job creation (`Idempotency-Key`). The job id of a keyed request is derived from
 * the project and the key (a UUIDv8 of SHA-256), so the job store's create-if-absent decides
 * between two racing requests in both backends (a local file, a JetStream KV create): no
 * second index to keep consistent. The fingerprint (SHA-256 of the request parameters,
 * metadata and body: the URL or the audio bytes) tells a retry from a different request.
 */
import { createHash, type Hash } from 'node:crypto';
import { type Readable, Transform } from 'node:stream';
import type { JobMetadata, JobRequest } from './types';

/** A key is honoured this long after the job it created (later, the same key creates a new job). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;
export const IDEMPOTENCY_KEY_RE = /^[\x21-\x7e]{1,255}$/;

export function idempotentJobId(project: { organization_id: string; project_id: string }, key: string): string {
  const h = createHash('sha256').update(`auris-idempotency\u0000${project.organization_id}\u0000${project.project_id}\u0000${key}`).digest('hex');
  // UUID version 8 (custom), RFC 9562 variant.
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Hash of everything that makes two creation requests "the same". */
export function requestFingerprint(parts: { request: JobRequest; metadata: JobMetadata | null; method: string; contentType: string | null; body: string }): string {
  return createHash('sha256').update(JSON.stringify([parts.method, parts.contentType, parts.request, parts.metadata, parts.body])).digest('hex');
}

/** The stream unchanged, hashing what passes through; digest() once it has ended. */
export function hashingStream(source: Readable): { stream: Readable; digest(): string } {
  const hash: Hash = createHash('sha256');
  const through = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  source.on('error', (err) => through.destroy(err));
  source.pipe(through);
  return { stream: through, digest: () => hash.digest('hex') };
}

/** Reads a stream to its end (at most `maxBytes`) only to hash it: the body of a replayed upload. */
export async function hashOf(source: Readable, maxBytes: number): Promise<{ digest: string; size: number } | null> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of source as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return null;
    hash.update(chunk);
  }
  return { digest: hash.digest('hex'), size };
}
