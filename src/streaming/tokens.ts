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
 * The tokens issued here and not yet redeemed or expired, by digest, with a count per key to bound
 * what one key can pile up. Entries are kept in issue order and every token lives ttlSec, so
 * expired ones are always at the front. The embedded store is this ledger alone; the shared store
 * keeps one beside its bucket for the per-key cap.
 */
export class IssuedTokens {
  private readonly entries = new Map<string, TokenEntry>();
  private readonly perKey = new Map<string, number>();

  constructor(readonly maxPerKey: number) {}

  /** Whether `keyId` may be issued one more token now (expired entries are dropped first). */
  allows(keyId: string, now: number): boolean {
    for (const [digest, e] of this.entries) {
      if (e.expiresAt > now) break;
      this.take(digest);
    }
    return (this.perKey.get(keyId) ?? 0) < this.maxPerKey;
  }

  add(digest: string, entry: TokenEntry): void {
    this.entries.set(digest, entry);
    this.perKey.set(entry.owner.key_id, (this.perKey.get(entry.owner.key_id) ?? 0) + 1);
  }

  /** Removes and returns a token's entry (undefined for one unknown here). */
  take(digest: string): TokenEntry | undefined {
    const e = this.entries.get(digest);
    if (!e) return undefined;
    this.entries.delete(digest);
    const n = (this.perKey.get(e.owner.key_id) ?? 1) - 1;
    if (n > 0) this.perKey.set(e.owner.key_id, n);
    else this.perKey.delete(e.owner.key_id);
    return e;
  }

  get size(): number {
    return this.entries.size;
  }
}

/** The embedded default: tokens in this process's memory. */
export class StreamTokens implements StreamTokenStore {
  private readonly issued: IssuedTokens;

  constructor(
    readonly ttlSec = 60,
    /** Unredeemed, unexpired tokens one key may hold (bounds memory). */
    maxPerKey = 1000,
  ) {
    this.issued = new IssuedTokens(maxPerKey);
  }

  async issue(owner: Owner, now = Date.now()): Promise<IssuedToken | null> {
    if (!this.issued.allows(owner.key_id, now)) return null;
    const { issued, digest, entry } = newToken(owner, this.ttlSec, now);
    this.issued.add(digest, entry);
    return issued;
  }

  async redeem(token: string, now = Date.now()): Promise<Owner | null> {
    const e = this.issued.take(tokenDigest(token));
    return e && e.expiresAt > now ? e.owner : null;
  }

  /** Live tokens (tests, metrics). */
  get size(): number {
    return this.issued.size;
  }
}
