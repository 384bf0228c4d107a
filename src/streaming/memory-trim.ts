/**
 * Gives the memory of closed streams back to the system after a burst of closes.
 *
 * A stream's native front end, model states and step buffers are freed when it ends, but
 * glibc's malloc keeps freed blocks of this size inside the heap for reuse: after 1,000
 * streams that had sent audio were closed, RSS stayed at 582 MiB (154 MiB before them), and
 * `malloc_trim(0)` brought it to 224 MiB in 38 ms (docs/reliability.md, `npm run
 * bench:idle-streams -- --audio-ms 1000`). The trim runs on a libuv pool thread (never on the
 * event loop), at most once per `minIntervalMs` and only once `minCloses` streams have ended
 * since the last one, so steady traffic pays almost nothing for it. The step buffers are
 * JavaScript ArrayBuffers, freed only when V8 collects them, which may be after the first
 * trim: `followUps` more trims, `minIntervalMs` apart, give back what later collections free.
 */
import { trimNativeMemory } from '../audio';

export interface MemoryTrimOptions {
  /** Streams ended since the last trim before another is worth it (default 64). */
  minCloses: number;
  /** Least time between two trims (default 10 s). */
  minIntervalMs: number;
  /** Trims after a burst's first one, for memory that garbage collection frees later (default 2). */
  followUps: number;
}

export class MemoryTrimmer {
  private closes = 0;
  private followUpsLeft = 0;
  private lastTrimAt = -Infinity;
  private running = false;
  private readonly options: MemoryTrimOptions;
  /** Trims started so far. */
  trims = 0;

  constructor(
    options: Partial<MemoryTrimOptions> = {},
    private readonly trim: () => Promise<boolean> = trimNativeMemory,
  ) {
    this.options = { minCloses: 64, minIntervalMs: 10_000, followUps: 2, ...options };
  }

  /** A stream ended. */
  noteClosed(): void {
    this.closes++;
  }

  /** Called periodically (the hub's sweeper): starts a trim when one is due. */
  tick(now: number): void {
    if (this.running || now - this.lastTrimAt < this.options.minIntervalMs) return;
    if (this.closes >= this.options.minCloses) {
      this.closes = 0;
      this.followUpsLeft = this.options.followUps;
    } else if (this.followUpsLeft > 0) {
      this.followUpsLeft--;
    } else {
      return;
    }
    this.running = true;
    this.lastTrimAt = now;
    this.trims++;
    // a failure only means memory stays with the allocator: nothing to report to a client
    void this.trim()
      .catch(() => false)
      .finally(() => (this.running = false));
  }
}
