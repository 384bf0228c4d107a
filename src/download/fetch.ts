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
 * Failures are AurisError with a stable code of the catalogue (src/errors.ts): DOWNLOAD_FAILED
 * (the upstream HTTP status, or "could not be reached"; the network error itself is the `cause`,
 * for the log), DOWNLOAD_TIMEOUT, DOWNLOAD_TOO_LARGE, URL_NOT_ALLOWED, DURATION_LIMIT_EXCEEDED.
 */
import { UNREACHABLE } from './ssrf';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { once } from 'node:events';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AurisError } from '../errors';
import { headDuration, type HeadProbe, nativeProbe } from './duration';
import { type Connector, discard, guardedRequest } from './guarded-http';
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
/** The host took the connection but sent no response headers within the connect timeout. */
class NoAnswer extends Error {
  override name = 'NoAnswer';
}
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

function failed(message: string): AurisError {
  return new AurisError('DOWNLOAD_FAILED', message);
}

function tooLarge(max: number): AurisError {
  return new AurisError('DOWNLOAD_TOO_LARGE', `The file is larger than the download limit of ${max} bytes.`);
}

/** The answer that carries the file, after the redirects. */
interface FinalResponse {
  res: IncomingMessage;
  url: URL;
  redirects: number;
}

export class Downloader {
  private readonly probe: HeadProbe | null;

  constructor(readonly options: DownloaderOptions) {
    this.probe = options.probe === undefined ? nativeProbe() : options.probe;
  }

  /** Downloads `identity.url` to `destPath`; the file is removed on failure. */
  async download(req: DownloadRequest): Promise<DownloadResult> {
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new TotalTimeout()), this.options.timeoutMs);
    const signal = req.signal ? AbortSignal.any([timeout.signal, req.signal]) : timeout.signal;
    try {
      const { res, url, redirects } = await this.follow(req, signal);
      this.checkDeclaredSize(res);
      const bytes = await this.receive(res, req, signal);
      return { bytes, contentType: res.headers['content-type'] ?? null, finalUrl: url.href, redirects };
    } catch (err) {
      await rm(req.destPath, { force: true }).catch(() => undefined);
      if (req.signal?.aborted) throw req.signal.reason ?? err;
      throw this.failure(err, timeout.signal.aborted);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The error a failed download ends with: a catalogue code, never a socket error name or an address. */
  private failure(err: unknown, timedOut: boolean): AurisError {
    const o = this.options;
    if (timedOut) return new AurisError('DOWNLOAD_TIMEOUT', `Downloading the file URL took longer than ${o.timeoutMs} ms.`);
    // A name that resolves to a refused address is told like a host that cannot be reached: the
    // caller must not learn which names the internal DNS knows (literal addresses are refused at creation).
    if (err instanceof AurisError && !isRefusedName(err)) return err;
    // No address, no socket error name (ECONNREFUSED vs a non-HTTP answer would map the network
    // behind the allowlist), one message for a name that does not resolve, a closed port, a
    // connect timeout, a silent open port and a TLS failure; the cause is logged.
    return new AurisError('DOWNLOAD_FAILED', UNREACHABLE, undefined, { cause: err instanceof AurisError ? err.cause ?? err : err });
  }

  /** Requests the URL, signed, and follows its redirects (each hop checked again) to a 2xx answer. */
  private async follow(req: DownloadRequest, signal: AbortSignal): Promise<FinalResponse> {
    const o = this.options;
    const maxRedirects = o.maxRedirects ?? MAX_REDIRECTS;
    let url = checkUrlForm(req.identity.url);
    for (let hop = 0; ; hop++) {
      const token = await o.signer.sign(req.identity);
      const res = await answerWithin(o.connectTimeoutMs, signal, (hopSignal) =>
        guardedRequest(url, o, {
          method: 'GET',
          headers: { [VERIFICATION_HEADER]: token, 'user-agent': USER_AGENT, accept: '*/*', 'accept-encoding': 'identity' },
          signal: hopSignal,
          connectTimeoutMs: o.connectTimeoutMs,
        }),
      );
      const status = res.statusCode ?? 0;
      if (REDIRECT_STATUSES.has(status)) {
        const location = res.headers.location;
        discard(res);
        if (!location) throw failed(`Downloading the file URL failed: HTTP ${status} without a Location.`);
        if (hop >= maxRedirects) throw failed(`Downloading the file URL failed: more than ${maxRedirects} redirects.`);
        url = redirectTarget(url, status, location);
        continue;
      }
      if (status < 200 || status > 299) {
        discard(res);
        throw failed(`Downloading the file URL failed with HTTP ${status}${STATUS_CODES[status] ? ` (${STATUS_CODES[status]})` : ''}.`);
      }
      return { res, url, redirects: hop };
    }
  }

  /** A Content-Length over the limit is refused before any byte of the body is read. */
  private checkDeclaredSize(res: IncomingMessage): void {
    const declared = Number(res.headers['content-length']);
    if (res.headers['content-length'] !== undefined && Number.isFinite(declared) && declared > this.options.maxBytes) {
      res.destroy();
      throw tooLarge(this.options.maxBytes);
    }
  }

  /** Streams the body to `destPath` through the size and duration checks; the bytes written. */
  private async receive(res: IncomingMessage, req: DownloadRequest, signal: AbortSignal): Promise<number> {
    const declared = Number(res.headers['content-length']);
    const total = res.headers['content-length'] !== undefined && Number.isFinite(declared) && declared > 0 ? declared : 0;
    const meter = new DownloadMeter(this.options.maxBytes, total, req, this.probe);
    const file = createWriteStream(req.destPath, { mode: 0o600 });
    try {
      await pipeline(res, meter, file, { signal });
    } catch (err) {
      // pipeline rejects as soon as one stream fails; the file may still be opening, and would then be created
      // after download() has removed it: wait until it is closed
      if (!file.closed) await once(file, 'close').catch(() => undefined);
      throw err;
    }
    return meter.bytes;
  }
}

/**
 * Runs one request whose response headers must arrive within `ms` (connect and TLS included):
 * a port that accepts and stays silent then fails like a closed one, not after the whole
 * download timeout. The body is bounded by the total timeout only.
 */
async function answerWithin<T>(ms: number, signal: AbortSignal, request: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const silent = new AbortController();
  const timer = setTimeout(() => silent.abort(new NoAnswer(`no response headers within ${ms} ms`)), ms);
  try {
    return await request(AbortSignal.any([signal, silent.signal]));
  } catch (err) {
    throw silent.signal.aborted && !signal.aborted ? silent.signal.reason : err;
  } finally {
    clearTimeout(timer);
  }
}

/** A refusal of the address a host name resolved to (src/download/ssrf.ts resolveChecked). */
function isRefusedName(err: AurisError): boolean {
  return err.code === 'URL_NOT_ALLOWED' && err.details?.resolved_name === true;
}

/** The next hop of a redirect: its Location, checked (scheme; never https -> http). */
function redirectTarget(from: URL, status: number, location: string): URL {
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    throw failed(`Downloading the file URL failed: HTTP ${status} to an invalid Location.`);
  }
  const url = checkUrlForm(next); // the scheme; the address is checked by the next guardedRequest
  if (from.protocol === 'https:' && url.protocol === 'http:') {
    throw new AurisError('URL_NOT_ALLOWED', 'A redirect from https to http is not followed (the signed request would travel in clear).');
  }
  return url;
}

/**
 * Counts the body's bytes against the limit, reports progress, and checks the duration once
 * from the first HEAD_BYTES (the stream waits for that check: backpressure).
 */
class DownloadMeter extends Transform {
  bytes = 0;
  private head: Buffer[] | null;
  private headLen = 0;

  constructor(
    private readonly maxBytes: number,
    /** The declared Content-Length (0: none), for progress. */
    private readonly total: number,
    private readonly req: DownloadRequest,
    private readonly probe: HeadProbe | null,
  ) {
    super();
    this.head = req.maxDurationSec !== undefined ? [] : null;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) return cb(tooLarge(this.maxBytes));
    if (this.total) this.req.onProgress?.(Math.min(this.bytes, this.total), this.total);
    if (!this.head) return cb(null, chunk);
    this.head.push(chunk);
    this.headLen += chunk.length;
    if (this.headLen < HEAD_BYTES) return cb(null, chunk);
    const buf = Buffer.concat(this.head);
    this.head = null; // one check
    this.checkDuration(buf).then(() => cb(null, chunk), (err: unknown) => cb(err as Error));
  }

  /** Refuses a file whose header shows more than the combined duration limit. */
  private async checkDuration(buf: Buffer): Promise<void> {
    const { maxDurationSec, channel } = this.req;
    const d = await headDuration(buf, this.probe);
    if (!d || maxDurationSec === undefined) return;
    const processed = channel !== null && channel !== undefined ? 1 : d.channels;
    const combined = d.durationSec * processed;
    if (combined > maxDurationSec) {
      throw new AurisError(
        'DURATION_LIMIT_EXCEEDED',
        `The audio is ${d.durationSec.toFixed(1)} s long over ${processed} channel(s) (${combined.toFixed(1)} s combined, from the ${d.format} header); the limit is ${maxDurationSec} s combined.`,
      );
    }
  }
}
