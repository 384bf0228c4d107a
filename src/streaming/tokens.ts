/**
 * Stream tokens: short-lived, single-use credentials for opening one live stream from a browser,
 * which cannot set headers on a WebSocket. A server holding the API key asks for one
 * (POST /stream-tokens) and hands it to the browser, which passes it as `?token=`; the
 * long-lived API key never appears in a URL.
 *
 * A token is 32 random bytes (base64url); only its SHA-256 digest is kept, with the owner
 * (key, organization, project) it stands for and its expiry. Redeeming deletes it. Tokens live
 * in this process: in a distributed deployment a token opens a stream on the API node that
 * issued it (docs/streaming.md).
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

interface Entry {
  owner: Owner;
  expiresAt: number;
}

const digest = (token: string): string => createHash('sha256').update(token, 'utf8').digest('base64url');

export class StreamTokens {
  private readonly tokens = new Map<string, Entry>();
  private readonly perKey = new Map<string, number>();

  constructor(
    /** Lifetime of a token, seconds. */
    readonly ttlSec = 60,
    /** Unredeemed, unexpired tokens one key may hold (bounds memory). */
    readonly maxPerKey = 1000,
  ) {}

  /** A new token for `owner`, or null when the key already holds maxPerKey live tokens. */
  issue(owner: Owner, now = Date.now()): IssuedToken | null {
    this.sweep(now);
    const held = this.perKey.get(owner.key_id) ?? 0;
    if (held >= this.maxPerKey) return null;
    const token = `st_${randomBytes(32).toString('base64url')}`;
    const expiresAt = now + this.ttlSec * 1000;
    this.tokens.set(digest(token), { owner, expiresAt });
    this.perKey.set(owner.key_id, held + 1);
    return { token, expires_in: this.ttlSec, expires_at: new Date(expiresAt).toISOString() };
  }

  /** The owner the token stands for, once: a used, expired or unknown token gives null. */
  redeem(token: string, now = Date.now()): Owner | null {
    const key = digest(token);
    const e = this.tokens.get(key);
    if (!e) return null;
    this.remove(key, e);
    return e.expiresAt > now ? e.owner : null;
  }

  /** Live tokens (tests, metrics). */
  get size(): number {
    return this.tokens.size;
  }

  private remove(key: string, e: Entry): void {
    this.tokens.delete(key);
    const n = (this.perKey.get(e.owner.key_id) ?? 1) - 1;
    if (n > 0) this.perKey.set(e.owner.key_id, n);
    else this.perKey.delete(e.owner.key_id);
  }

  /** Drops expired tokens (Map order is issue order, and every token lives ttlSec: stop at the first live one). */
  private sweep(now: number): void {
    for (const [key, e] of this.tokens) {
      if (e.expiresAt > now) break;
      this.remove(key, e);
    }
  }
}
