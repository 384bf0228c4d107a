/**
 * Failed-authentication throttling per client address: after `limit` requests with a
 * missing or wrong API key within `windowMs`, the address gets 429 TOO_MANY_AUTH_FAILURES
 * (before any key is looked at, so a key cannot be confirmed meanwhile) until its window has
 * passed. Guessing keys is slowed to `limit` tries per window and address, and the log shows
 * one line per blocked address and window, not one per attempt.
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
export function clientKey(address: string): string {
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

  /** Seconds until `address` may authenticate again (for Retry-After); 0 when it may now. */
  blockedFor(address: string, now = Date.now()): number {
    const w = this.current(clientKey(address), now);
    if (!w || w.failures < this.limit) return 0;
    return Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000));
  }

  /** Counts a failed authentication; true when this one reached the limit (log it once). */
  fail(address: string, now = Date.now()): boolean {
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
