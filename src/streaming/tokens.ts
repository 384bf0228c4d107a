/**
 * Stream tokens: short-lived, single-use credentials for opening one live stream from a browser,
 * which cannot set headers on a WebSocket. A server holding the API key asks for one
 * (POST /stream-tokens) and hands it to the browser, which passes it as `?token=`; the
 * long-lived API key never appears in a URL.
 *
 * A token is 32 random bytes (base64url); only its SHA-256 digest is kept, with the owner
 * (key, organization, project) it stands for and its expiry. Redeeming deletes it.
 * Where the digests are kept is the store's business: this process (`StreamTokens`, the
 * embedded default) or a JetStream KV bucket that every API node shares (distributed mode,
 * src/jobs/nats/stream-tokens.ts), so a token issued by one node opens a stream on any.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Owner } from '../jobs/service';

export interface IssuedToken {
  token: string;
  /** Seconds until it expires. */
  expires_in: number;
  /** ISO 8601. */
  expires_at: string;
}

/** What the routes need of a token store (POST /stream-tokens issues, GET /stream redeems). */
export interface StreamTokenStore {
  /** Lifetime of a token, seconds. */
  readonly ttlSec: number;
  /** A new token for `owner`, or null when the key already holds its most unexpired tokens. */
  issue(owner: Owner, now?: number): Promise<IssuedToken | null>;
  /** The owner the token stands for, once: a used, expired or unknown token gives null. */
  redeem(token: string, now?: number): Promise<Owner | null>;
}

/** What a store keeps per token, under its digest. */
export interface TokenEntry {
  owner: Owner;
  /** Epoch ms. */
  expiresAt: number;
}

/** Only the digest of a token is ever kept (base64url: also a valid KV key). */
export const tokenDigest = (token: string): string => createHash('sha256').update(token, 'utf8').digest('base64url');

/** A fresh token and what a store keeps of it. */
export function newToken(owner: Owner, ttlSec: number, now: number): { issued: IssuedToken; digest: string; entry: TokenEntry } {
  const token = `st_${randomBytes(32).toString('base64url')}`;
  const expiresAt = now + ttlSec * 1000;
  return { issued: { token, expires_in: ttlSec, expires_at: new Date(expiresAt).toISOString() }, digest: tokenDigest(token), entry: { owner, expiresAt } };
}

/**
 * Counts the unexpired tokens each key was issued here, to bound what one key can pile up.
 * Entries are kept in issue order and every token lives ttlSec, so expired ones are always
 * at the front.
 */
export class PerKeyCount {
  private readonly issued = new Map<string, { keyId: string; expiresAt: number }>();
  private readonly perKey = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Whether `keyId` may be issued one more token now. */
  allows(keyId: string, now: number): boolean {
    this.sweep(now);
    return (this.perKey.get(keyId) ?? 0) < this.max;
  }

  add(digest: string, keyId: string, expiresAt: number): void {
    this.issued.set(digest, { keyId, expiresAt });
    this.perKey.set(keyId, (this.perKey.get(keyId) ?? 0) + 1);
  }

  /** A token redeemed before it expired (no-op for one issued elsewhere). */
  remove(digest: string): void {
    const e = this.issued.get(digest);
    if (!e) return;
    this.issued.delete(digest);
    const n = (this.perKey.get(e.keyId) ?? 1) - 1;
    if (n > 0) this.perKey.set(e.keyId, n);
    else this.perKey.delete(e.keyId);
  }

  private sweep(now: number): void {
    for (const [digest, e] of this.issued) {
      if (e.expiresAt > now) break;
      this.remove(digest);
    }
  }
}

/** The embedded default: tokens in this process's memory. */
export class StreamTokens implements StreamTokenStore {
  private readonly tokens = new Map<string, TokenEntry>();
  private readonly count: PerKeyCount;

  constructor(
    readonly ttlSec = 60,
    /** Unredeemed, unexpired tokens one key may hold (bounds memory). */
    maxPerKey = 1000,
  ) {
    this.count = new PerKeyCount(maxPerKey);
  }

  async issue(owner: Owner, now = Date.now()): Promise<IssuedToken | null> {
    // Expired tokens leave the map when the count sweeps them (both in issue order).
    if (!this.count.allows(owner.key_id, now)) return null;
    this.dropExpired(now);
    const { issued, digest, entry } = newToken(owner, this.ttlSec, now);
    this.tokens.set(digest, entry);
    this.count.add(digest, owner.key_id, entry.expiresAt);
    return issued;
  }

  async redeem(token: string, now = Date.now()): Promise<Owner | null> {
    const digest = tokenDigest(token);
    const e = this.tokens.get(digest);
    if (!e) return null;
    this.tokens.delete(digest);
    this.count.remove(digest);
    return e.expiresAt > now ? e.owner : null;
  }

  /** Live tokens (tests, metrics). */
  get size(): number {
    return this.tokens.size;
  }

  private dropExpired(now: number): void {
    for (const [digest, e] of this.tokens) {
      if (e.expiresAt > now) break;
      this.tokens.delete(digest);
    }
  }
}
