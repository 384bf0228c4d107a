/**
 * For callback receivers: checks the Standard Webhooks signature of a job-finished callback
 * (docs/api.md "Callbacks").
 *
 *   const seen = new MemoryWebhookIdStore();
 *   try {
 *     const job = verifyCallback(rawBody, req.headers, { secret: process.env.AURIS_CALLBACK_SECRET!, seenIds: seen });
 *     // job.status, job.results_url, job.metadata ...
 *   } catch (err) {
 *     // CallbackVerificationError: answer 400 (and do not act on the body)
 *   }
 *
 * Checked, in this order: the three headers are present; webhook-timestamp is within
 * `toleranceSec` (default 300 s, at most 300 s) of now, so a captured request cannot be
 * replayed later; one of the `v1,` signatures matches HMAC-SHA256(secret, id.timestamp.body)
 * (compared in constant time); the id was not seen before (when `seenIds` is given: it is
 * recorded only for a request that passed all else; every retry of one event carries the
 * same id, so a receiver that stores ids also drops duplicate deliveries).
 */
import { timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from './signing';

/** The Standard Webhooks default window; a larger one would widen the replay window. */
export const MAX_CALLBACK_TOLERANCE_SEC = 300;

export type CallbackVerificationErrorCode = 'MISSING_HEADER' | 'TIMESTAMP_OUT_OF_WINDOW' | 'INVALID_SIGNATURE' | 'REPLAYED' | 'MALFORMED_BODY';

export class CallbackVerificationError extends Error {
  override name = 'CallbackVerificationError';
  constructor(
    readonly code: CallbackVerificationErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Remembers webhook ids for the replay window. */
export interface WebhookIdStore {
  /** True if `id` was recorded before; records it otherwise (kept at least `ttlSec`). */
  seen(id: string, ttlSec: number): boolean | Promise<boolean>;
}

export class MemoryWebhookIdStore implements WebhookIdStore {
  private readonly ids = new Map<string, number>();
  seen(id: string, ttlSec: number): boolean {
    const now = Date.now();
    for (const [k, until] of this.ids) if (until < now) this.ids.delete(k);
    if (this.ids.has(id)) return true;
    this.ids.set(id, now + ttlSec * 1000 * 2);
    return false;
  }
}

export interface VerifyCallbackOptions {
  /** The project's signing secret, `whsec_...` (GET /file-processing/callback-secret). */
  secret: string;
  /** Largest accepted distance of webhook-timestamp from now, seconds (default and maximum 300). */
  toleranceSec?: number;
  /** Rejects a second request with the same webhook-id (replays, duplicate deliveries). */
  seenIds?: WebhookIdStore;
  /** "Now" for the timestamp check (tests). */
  now?: Date;
}

type HeaderBag = Record<string, string | string[] | undefined> | Headers;

function header(headers: HeaderBag, name: string): string | undefined {
  const v = headers instanceof Headers ? headers.get(name) ?? undefined : headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

/** Verifies a callback request; returns the parsed job record. Throws CallbackVerificationError. */
export async function verifyCallback<T = Record<string, unknown>>(body: string | Buffer, headers: HeaderBag, opts: VerifyCallbackOptions): Promise<T> {
  const id = header(headers, WEBHOOK_ID_HEADER);
  const timestamp = header(headers, WEBHOOK_TIMESTAMP_HEADER);
  const signature = header(headers, WEBHOOK_SIGNATURE_HEADER);
  for (const [name, v] of [[WEBHOOK_ID_HEADER, id], [WEBHOOK_TIMESTAMP_HEADER, timestamp], [WEBHOOK_SIGNATURE_HEADER, signature]] as const) {
    if (!v) throw new CallbackVerificationError('MISSING_HEADER', `the ${name} header is missing`);
  }
  const tolerance = Math.min(opts.toleranceSec ?? MAX_CALLBACK_TOLERANCE_SEC, MAX_CALLBACK_TOLERANCE_SEC);
  const ts = /^\d{1,12}$/.test(timestamp!) ? Number(timestamp) : NaN;
  const now = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  if (!Number.isFinite(ts) || Math.abs(now - ts) > tolerance) {
    throw new CallbackVerificationError('TIMESTAMP_OUT_OF_WINDOW', `webhook-timestamp is not within ${tolerance} s of now`);
  }
  let wh: Webhook;
  try {
    wh = new Webhook(opts.secret);
  } catch (err) {
    throw new TypeError(`verifyCallback: the secret is not a whsec_ base64 secret (${(err as Error).message})`);
  }
  // The package computes the expected signature; the window is ours (so `now` and the tolerance apply).
  const expected = wh.sign(id!, new Date(ts * 1000), body);
  const given = signature!.split(' ').filter((s) => s.startsWith('v1,'));
  if (!given.some((s) => constantTimeEqual(s, expected))) {
    throw new CallbackVerificationError('INVALID_SIGNATURE', 'no webhook-signature matches the body with this secret');
  }
  if (opts.seenIds && (await opts.seenIds.seen(id!, tolerance))) {
    throw new CallbackVerificationError('REPLAYED', `webhook-id ${id} was already received`);
  }
  try {
    return JSON.parse(Buffer.isBuffer(body) ? body.toString('utf8') : body) as T;
  } catch {
    throw new CallbackVerificationError('MALFORMED_BODY', 'the body is not JSON');
  }
}

function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) return false;
  return timingSafeEqual(ab, bb);
}
