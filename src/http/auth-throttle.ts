/**
 * Failed-authentication throttling per client address: after `limit` requests with a
 * missing or wrong API key within `windowMs`, the address's further failures are answered
 * 429 TOO_MANY_AUTH_FAILURES (with Retry-After) instead of 401 until its window has passed, and
 * the log shows one line per blocked address and window, not one per attempt.
 *
 * Valid credentials are never refused here: behind a NAT or a proxy one keyless client shares
 * its address with every tenant, and blocking the address locked them all out. The throttle
 * bounds what failures cost (answers, log lines); guessing a key is bounded by the key's
 * entropy (generated keys carry 192 bits, configured keys must have 8 characters at least).
 */
import { parseIp } from '../download/ssrf';

interface Window {
  start: number;
  failures: number;
}

/** At most this many addresses are tracked; the oldest windows go first beyond it. */
const MAX_TRACKED = 100_000;

/**
 * The throttled unit of an address: IPv4 as is, IPv6 by its /64 (one host usually holds a
 * whole /64, and could otherwise rotate through it).
 */
export function clientKey(address: string | undefined): string {
  // A socket that is already closed has no remote address (a client that reset its request).
  if (address === undefined || address === '') return 'unknown';
  const ip = parseIp(address);
  if (!ip) return address;
  if (ip.family === 4) return address;
  const mapped = ip.bytes.slice(0, 10).every((b) => b === 0) && ip.bytes[10] === 0xff && ip.bytes[11] === 0xff;
  if (mapped) return ip.bytes.slice(12).join('.');
  return `${Buffer.from(ip.bytes.slice(0, 8)).toString('hex')}::/64`;
}

export class AuthFailureThrottle {
  private readonly windows = new Map<string, Window>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  private current(key: string, now: number): Window | null {
    const w = this.windows.get(key);
    if (w && now - w.start >= this.windowMs) {
      this.windows.delete(key);
      return null;
    }
    return w ?? null;
  }

  /**
   * Records a failed authentication. `retryAfter` > 0: the address is over its limit, answer
   * 429 with this Retry-After (seconds); 0: answer 401. `reachedLimit`: this failure used up the
   * limit (log it once).
   */
  failure(address: string | undefined, now = Date.now()): { retryAfter: number; reachedLimit: boolean } {
    const retryAfter = this.blockedFor(address, now);
    if (retryAfter > 0) return { retryAfter, reachedLimit: false };
    return { retryAfter: 0, reachedLimit: this.fail(address, now) };
  }

  /** Seconds until `address`'s failures are answered 401 again (for Retry-After); 0 when they are now. */
  blockedFor(address: string | undefined, now = Date.now()): number {
    const w = this.current(clientKey(address), now);
    if (!w || w.failures < this.limit) return 0;
    return Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000));
  }

  /** Counts a failed authentication; true when this one reached the limit (log it once). */
  fail(address: string | undefined, now = Date.now()): boolean {
    const key = clientKey(address);
    let w = this.current(key, now);
    if (!w) {
      if (this.windows.size >= MAX_TRACKED) this.prune(now);
      w = { start: now, failures: 0 };
      this.windows.set(key, w);
    }
    w.failures++;
    return w.failures === this.limit;
  }

  /** Drops ended windows, then the oldest ones while still over the cap. */
  private prune(now: number): void {
    for (const [k, w] of this.windows) if (now - w.start >= this.windowMs) this.windows.delete(k);
    for (const k of this.windows.keys()) {
      if (this.windows.size < MAX_TRACKED) break;
      this.windows.delete(k);
    }
  }
}
