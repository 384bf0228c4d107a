/**
 * The URL method's download, kept behind this one function: a plain streaming fetch of an
 * http(s) URL into a file, with a size cap and a timeout. The signed, SSRF-safe download
 * (issue 5) replaces this module's implementation; callers only see fetchSource().
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { JobFailure } from './errors';

export interface FetchSourceOptions {
  maxBytes: number;
  timeoutMs: number;
  /** Aborts the download (job deleted, shutdown). */
  signal?: AbortSignal;
  /** Identity of the job, for the request signing of issue 5. */
  job?: { jobId: string; organizationId: string; projectId: string };
}

/** Downloads `url` to `destPath`. Throws JobFailure (DOWNLOAD_*, URL_NOT_ALLOWED) on failure. */
export async function fetchSource(url: string, destPath: string, opts: FetchSourceOptions): Promise<{ bytes: number; contentType: string | null }> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new JobFailure('URL_NOT_ALLOWED', 'The file URL is not a valid absolute URL.');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new JobFailure('URL_NOT_ALLOWED', 'Only http and https file URLs are allowed.');
  }
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
  const timedOut = (): boolean => timeout.aborted && !opts.signal?.aborted;
  let bytes = 0;
  try {
    const res = await fetch(parsed, { signal, redirect: 'follow', headers: { 'user-agent': 'auris-fetch/0.1' } });
    if (!res.ok || !res.body) {
      await res.body?.cancel().catch(() => undefined);
      throw new JobFailure('DOWNLOAD_FAILED', `Downloading the file URL failed with HTTP ${res.status}.`);
    }
    const declared = Number(res.headers.get('content-length'));
    if (Number.isFinite(declared) && declared > opts.maxBytes) {
      await res.body.cancel().catch(() => undefined);
      throw new JobFailure('DOWNLOAD_TOO_LARGE', `The file is larger than the download limit of ${opts.maxBytes} bytes.`);
    }
    const cap = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        bytes += chunk.length;
        if (bytes > opts.maxBytes) cb(new JobFailure('DOWNLOAD_TOO_LARGE', `The file is larger than the download limit of ${opts.maxBytes} bytes.`));
        else cb(null, chunk);
      },
    });
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), cap, createWriteStream(destPath), { signal });
    return { bytes, contentType: res.headers.get('content-type') };
  } catch (err) {
    await rm(destPath, { force: true });
    if (err instanceof JobFailure) throw err;
    if (timedOut()) throw new JobFailure('DOWNLOAD_TIMEOUT', `Downloading the file URL took longer than ${opts.timeoutMs} ms.`);
    if (opts.signal?.aborted) throw err;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new JobFailure('DOWNLOAD_FAILED', `Downloading the file URL failed: ${cause?.code ?? cause?.message ?? (err as Error).message}.`);
  }
}
