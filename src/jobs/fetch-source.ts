/**
 * The URL method's download, behind this one function: the signed, SSRF-safe streaming
 * download of src/download (docs/download.md). Callers only see fetchSource().
 */
import type { Config } from '../config';
import type { DownloadRequest, DownloadResult } from '../download/fetch';
import { AurisError } from '../errors';

/** What fetchSource needs of src/download's Downloader. */
export interface SourceDownloader {
  download(req: DownloadRequest): Promise<DownloadResult>;
}

export interface FetchSourceOptions {
  /** The signed, SSRF-checked downloader (the server's, or lazyDownloader(config)). */
  downloader: SourceDownloader;
  /** Aborts the download (job deleted, shutdown). */
  signal?: AbortSignal;
  /** Identity of the job: the claims of the signed request. */
  job: { jobId: string; organizationId: string; projectId: string };
  /** Combined duration limit, seconds: the download stops as soon as the header shows more. */
  maxDurationSec?: number;
  /** The channel the job analyses (null: all), for the combined duration. */
  channel?: number | null;
  /** Bytes received so far of `total` (the Content-Length), when the server sends one. */
  onProgress?: (bytes: number, total: number) => void;
}

/**
 * Downloads `url` (exactly as given at job creation) to `destPath`. Throws AurisError
 * (DOWNLOAD_FAILED, DOWNLOAD_TIMEOUT, DOWNLOAD_TOO_LARGE, URL_NOT_ALLOWED,
 * DURATION_LIMIT_EXCEEDED) on failure; the file is removed then.
 */
export async function fetchSource(url: string, destPath: string, opts: FetchSourceOptions): Promise<{ bytes: number; contentType: string | null }> {
  if (!url) throw new AurisError('URL_NOT_ALLOWED', 'The job has no file URL.');
  const got = await opts.downloader.download({
    identity: { url, jobId: opts.job.jobId, organizationId: opts.job.organizationId, projectId: opts.job.projectId },
    destPath,
    signal: opts.signal,
    maxDurationSec: opts.maxDurationSec,
    channel: opts.channel,
    onProgress: opts.onProgress,
  });
  return { bytes: got.bytes, contentType: got.contentType };
}

/** A downloader built from the configuration on first use (keys loaded or generated then). */
export function lazyDownloader(config: Config): SourceDownloader {
  let ready: Promise<SourceDownloader> | null = null;
  return {
    async download(req) {
      ready ??= import('../download').then((m) => m.createDownloadService(config)).then((s) => s.downloader);
      let downloader: SourceDownloader;
      try {
        downloader = await ready;
      } catch (err) {
        ready = null; // keys could not be loaded: try again with the next job
        throw err;
      }
      return downloader.download(req);
    },
  };
}
