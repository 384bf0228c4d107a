/**
 * API keys (x-api-key) and the per-key request rate limit.
 * Keys are compared as SHA-256 digests with crypto.timingSafeEqual, against every
 * configured key (no early exit), so timing reveals neither the key nor which one matched.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ApiKeyEntry } from '../config';
import type { Owner } from '../jobs/service';

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

export class ApiKeyRegistry {
  private readonly entries: Array<{ digest: Buffer; owner: Owner }>;

  constructor(keys: readonly ApiKeyEntry[]) {
    this.entries = keys.map((k) => {
      const d = digest(k.key);
      return { digest: d, owner: { organization_id: k.organizationId, project_id: k.projectId, key_id: d.toString('hex').slice(0, 16) } };
    });
  }

  get size(): number {
    return this.entries.length;
  }

  /** The owner of `key`, or null. */
  lookup(key: string): Owner | null {
    const d = digest(key);
    let found: Owner | null = null;
    for (const e of this.entries) {
      if (timingSafeEqual(d, e.digest)) found = e.owner;
    }
    return found;
  }
}

/** A fresh development key (used when no key is configured; never auth off). */
export function generateDevKey(): ApiKeyEntry {
  return { key: `dev_${randomBytes(24).toString('base64url')}`, organizationId: 'dev', projectId: 'dev' };
}

/** Token bucket per key: `rate` tokens per second, at most `burst`. */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {}

  /** Takes a token; returns 0 when allowed, else the seconds to wait (for Retry-After). */
  take(key: string, now = Date.now()): number {
    let b = this.buckets.get(key);
    if (!b) {
      b = { tokens: this.burst, at: now };
      this.buckets.set(key, b);
    }
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.rate);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.rate));
  }

  /**
   * The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers) for the key's
   * bucket: the policy (quota q = burst over window w = the seconds to refill it) and the
   * remaining tokens r with t = seconds until the bucket is full again.
   */
  headers(key: string, now = Date.now()): { 'ratelimit-policy': string; ratelimit: string } {
    const b = this.buckets.get(key);
    const tokens = b ? Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.rate) : this.burst;
    const remaining = Math.floor(tokens);
    const reset = Math.ceil((this.burst - tokens) / this.rate);
    return {
      'ratelimit-policy': `"per-key";q=${this.burst};w=${Math.max(1, Math.ceil(this.burst / this.rate))}`,
      ratelimit: `"per-key";r=${remaining};t=${reset}`,
    };
  }
}
