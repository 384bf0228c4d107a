/**
 * The URL method's download: signed (sign.ts), SSRF-checked on every hop (ssrf.ts,
 * guarded-http.ts), streamed to a temporary file (never held in memory), with caps:
 *
 *  - maximum bytes (Content-Length checked first, then counted while streaming);
 *  - a connect timeout per hop and a total timeout over all hops and the body;
 *  - at most 5 redirects (301, 302, 303, 307, 308), each checked again; never https -> http;
 *  - the duration limit, from the first 64 KiB (duration.ts): a file whose header shows
 *    more than the limit is refused at once, the rest of it is never downloaded.
 *
 * Failures are JobFailure with a stable code: DOWNLOAD_FAILED (the upstream HTTP status, or
 * "could not be reached"; the network error itself is the `cause`, for the log), DOWNLOAD_TIMEOUT, DOWNLOAD_TOO_LARGE, URL_NOT_ALLOWED,
 * DURATION_LIMIT_EXCEEDED.
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { once } from 'node:events';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { JobFailure } from '../jobs/errors';
import { headDuration, type HeadProbe, nativeProbe } from './duration';
import { ConnectTimeoutError, type Connector, discard, guardedRequest } from './guarded-http';
import type { DownloadIdentity, DownloadSigner } from './sign';
import { VERIFICATION_HEADER } from './sign';
import { type AddressPolicy, checkUrlForm, type Resolver } from './ssrf';

export const MAX_REDIRECTS = 5;
/** Bytes collected before the early duration check. */
export const HEAD_BYTES = 64 * 1024;
const USER_AGENT = 'auris-download/0.1';

export interface DownloaderOptions {
  signer: DownloadSigner;
  policy: AddressPolicy;
  maxBytes: number;
  /** Whole download (all hops and the body), ms. */
  timeoutMs: number;
  /** Opening one connection (TCP + TLS), ms. */
  connectTimeoutMs: number;
  resolver?: Resolver;
  connector?: Connector;
  /** Header probe for the early duration check; default the native addon's (null: no early check). */
  probe?: HeadProbe | null;
  maxRedirects?: number;
}

export interface DownloadRequest {
  /** Who asks, for the token; `url` is the URL as given at job creation. */
  identity: DownloadIdentity;
  destPath: string;
  signal?: AbortSignal;
  /** Combined duration limit (seconds) for the early check, and the selected channel (null: all). */
  maxDurationSec?: number;
  channel?: number | null;
  /** Bytes received of the declared Content-Length, as they arrive (not called without one). */
  onProgress?: (bytes: number, total: number) => void;
}

export interface DownloadResult {
  bytes: number;
  contentType: string | null;
  /** The URL the file finally came from (after redirects). */
  finalUrl: string;
  redirects: number;
}

class TotalTimeout extends Error {}

const UNREACHABLE = 'Downloading the file URL failed: its host could not be reached, did not answer HTTP or failed the TLS check.';

function failed(message: string): JobFailure {
  return new JobFailure('DOWNLOAD_FAILED', message);
}

function tooLarge(max: number): JobFailure {
  return new JobFailure('DOWNLOAD_TOO_LARGE', `The file is larger than the download limit of ${max} bytes.`);
}

export class Downloader {
  private readonly probe: HeadProbe | null;

  constructor(readonly options: DownloaderOptions) {
    this.probe = options.probe === undefined ? nativeProbe() : options.probe;
  }

  /** Downloads `identity.url` to `destPath`; the file is removed on failure. */
  async download(req: DownloadRequest): Promise<DownloadResult> {
    const o = this.options;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new TotalTimeout()), o.timeoutMs);
    const signal = req.signal ? AbortSignal.any([timeout.signal, req.signal]) : timeout.signal;
    try {
      return await this.run(req, signal);
    } catch (err) {
      await rm(req.destPath, { force: true }).catch(() => undefined);
      if (req.signal?.aborted) throw req.signal.reason ?? err;
      if (timeout.signal.aborted) throw new JobFailure('DOWNLOAD_TIMEOUT', `Downloading the file URL took longer than ${o.timeoutMs} ms.`);
      if (err instanceof JobFailure) throw err;
      // No address, no socket error name (ECONNREFUSED vs a non-HTTP answer would map the network
      // behind the allowlist): the caller learns the host could not be reached; the cause is logged.
      if (err instanceof ConnectTimeoutError) {
        throw new JobFailure('DOWNLOAD_TIMEOUT', `Downloading the file URL failed: connecting to its host took longer than ${o.connectTimeoutMs} ms.`, { cause: err });
      }
      throw new JobFailure('DOWNLOAD_FAILED', UNREACHABLE, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }

  private async run(req: DownloadRequest, signal: AbortSignal): Promise<DownloadResult> {
    const o = this.options;
    const maxRedirects = o.maxRedirects ?? MAX_REDIRECTS;
    let url = checkUrlForm(req.identity.url);
    let res: IncomingMessage;
    let redirects = 0;
    for (let hop = 0; ; hop++) {
      const token = await o.signer.sign(req.identity);
      res = await guardedRequest(url, o, {
        method: 'GET',
        headers: { [VERIFICATION_HEADER]: token, 'user-agent': USER_AGENT, accept: '*/*', 'accept-encoding': 'identity' },
        signal,
        connectTimeoutMs: o.connectTimeoutMs,
      });
      const status = res.statusCode ?? 0;
      if ([301, 302, 303, 307, 308].includes(status)) {
        const location = res.headers.location;
        discard(res);
        if (!location) throw failed(`Downloading the file URL failed: HTTP ${status} without a Location.`);
        if (hop >= maxRedirects) throw failed(`Downloading the file URL failed: more than ${maxRedirects} redirects.`);
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw failed(`Downloading the file URL failed: HTTP ${status} to an invalid Location.`);
        }
        const from = url;
        url = checkUrlForm(next); // the scheme; the address is checked by the next guardedRequest
        if (from.protocol === 'https:' && url.protocol === 'http:') {
          throw new JobFailure('URL_NOT_ALLOWED', 'A redirect from https to http is not followed (the signed request would travel in clear).');
        }
        redirects++;
        continue;
      }
      if (status < 200 || status > 299) {
        discard(res);
        throw failed(`Downloading the file URL failed with HTTP ${status}${STATUS_CODES[status] ? ` (${STATUS_CODES[status]})` : ''}.`);
      }
      break;
    }

    const declared = Number(res.headers['content-length']);
    if (res.headers['content-length'] !== undefined && Number.isFinite(declared) && declared > o.maxBytes) {
      res.destroy();
      throw tooLarge(o.maxBytes);
    }

    let bytes = 0;
    const total = res.headers['content-length'] !== undefined && Number.isFinite(declared) && declared > 0 ? declared : 0;
    let head: Buffer[] | null = req.maxDurationSec !== undefined ? [] : null;
    let headLen = 0;
    const check = async (buf: Buffer): Promise<void> => {
      const d = await headDuration(buf, this.probe);
      if (!d || req.maxDurationSec === undefined) return;
      const processed = req.channel !== null && req.channel !== undefined ? 1 : d.channels;
      const combined = d.durationSec * processed;
      if (combined > req.maxDurationSec) {
        throw new JobFailure(
          'DURATION_LIMIT_EXCEEDED',
          `The audio is ${d.durationSec.toFixed(1)} s long over ${processed} channel(s) (${combined.toFixed(1)} s combined, from the ${d.format} header); the limit is ${req.maxDurationSec} s combined.`,
        );
      }
    };
    const meter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        bytes += chunk.length;
        if (bytes > o.maxBytes) return cb(tooLarge(o.maxBytes));
        if (total) req.onProgress?.(Math.min(bytes, total), total);
        if (!head) return cb(null, chunk);
        head.push(chunk);
        headLen += chunk.length;
        if (headLen < HEAD_BYTES) return cb(null, chunk);
        const buf = Buffer.concat(head);
        head = null; // one check; the stream waits for it (backpressure)
        check(buf).then(() => cb(null, chunk), (err: unknown) => cb(err as Error));
      },
    });
    const file = createWriteStream(req.destPath, { mode: 0o600 });
    try {
      await pipeline(res, meter, file, { signal });
    } catch (err) {
      // pipeline rejects as soon as one stream fails; the file may still be opening, and would then be created
      // after download() has removed it: wait until it is closed
      if (!file.closed) await once(file, 'close').catch(() => undefined);
      throw err;
    }
    return { bytes, contentType: res.headers['content-type'] ?? null, finalUrl: url.href, redirects };
  }
}
