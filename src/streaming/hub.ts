/**
 * StreamHub: what the live-stream transports (gRPC, WebSocket) share in one process: the stream
 * inference engine, the limits, admission (a total and a per-API-key concurrent-stream quota,
 * counted across both transports), idle timeouts, statistics and the shutdown of open streams.
 */
import { AurisError } from '../errors';
import type { InferenceEngine } from '../inference/engine';
import type { Owner } from '../jobs/service';
import { LiveStream, type StreamError, type StreamSink, type Transport } from './live-stream';
import { MemoryTrimmer } from './memory-trim';

export interface StreamLimits {
  /** Concurrent streams in this process; more get TOO_MANY_STREAMS (default 1000). */
  maxStreams: number;
  /** Concurrent streams per API key (both transports together); more get TOO_MANY_STREAMS (default 100). */
  maxStreamsPerKey: number;
  /** A gRPC stream must send its config within this, ms (default 10 000); IDLE_TIMEOUT otherwise. */
  configTimeoutMs: number;
  /** A configured stream that sends no audio (and does not end) for this long ends with IDLE_TIMEOUT, ms (default 30 000; 0: never). */
  idleTimeoutMs: number;
  /**
   * Results waiting for a client that does not read, per stream (default 1024). Must be at
   * least 2 x maxWindowSteps: one model call can complete that many output steps at once.
   */
  maxQueuedResults: number;
  /** Steps the models may lag behind before reading pauses (default 256 = 16 s of audio). */
  maxBacklogSteps: number;
  /** Received audio bytes waiting to be processed before reading pauses (default 1 MiB). */
  maxPendingInputBytes: number;
  /**
   * A stream whose client sends faster than real time and does not take its results is
   * throttled (its input and models wait); if its output makes no progress for this long, it
   * ends with RESOURCE_EXHAUSTED (default 30 000 ms).
   */
  maxStallMs: number;
  /**
   * Audio a client may send ahead of wall-clock time (since its first audio) and still count
   * as a live source, ms (default 2000). Live sources are never throttled by their output:
   * their results queue up to maxQueuedResults.
   */
  realtimeSlackMs: number;
  /** Largest output_period, ms (default 3 600 000). */
  maxOutputPeriodMs: number;
  /** Most output steps per model call (default 256). */
  maxWindowSteps: number;
  /**
   * Run models that ship a stateful streaming graph through it (default true): each step is
   * computed once instead of once per window it falls in. Same results; false is for comparisons.
   */
  statefulModels: boolean;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  maxStreams: 1000,
  maxStreamsPerKey: 100,
  configTimeoutMs: 10_000,
  idleTimeoutMs: 30_000,
  maxQueuedResults: 1024,
  maxBacklogSteps: 256,
  maxPendingInputBytes: 1024 * 1024,
  maxStallMs: 30_000,
  realtimeSlackMs: 2000,
  maxOutputPeriodMs: 3_600_000,
  maxWindowSteps: 256,
  statefulModels: true,
};

/**
 * Default least time between two dispatches of the stream engine's model calls (ms). 0: each
 * call goes to an idle worker at once. A few ms let the calls of many streams share batches
 * (about 10-40 % less server CPU below saturation), but near saturation gRPC streams fell
 * behind with it where they did not without (docs/streaming.md, Benchmark), so it is opt-in
 * (`dispatchIntervalMs`).
 */
export const STREAM_DISPATCH_INTERVAL_MS = 0;

/**
 * Most batches of network calls the stream engine hands a worker in one message (InferencePool `bundle`). 300 live
 * streams make about 1 500 hand-overs a second one at a time; four at a time, a third as many, and finals-only p99 at
 * 300 streams fell from 59-186 to 61-90 ms (docs/streaming.md, session 49).
 */
export const STREAM_BUNDLE = 4;

/**
 * Hand-overs a stream engine's worker may hold at once (InferencePool `depth`): with 2 a worker starts its next batches
 * without waiting for the main thread's turn; 300 streams with provisional results, p99 243-337 ms against 299-331
 * alternating with 1 (docs/streaming.md, session 50).
 */
export const STREAM_DEPTH = 2;

/**
 * The stream engine's pool is behind (InferencePool `behindWaitMs`) while its jobs wait longer than this in the queue
 * (8 and 15 ms measured alike): 3-5 ms at 100 streams of speech + arousal + gender spread over 10 s, 30 ms and more at
 * 300 with provisional results. Speech's provisional head then ends its calls on every other step, at about the same
 * cost per call (src/pipeline/provisional-results.ts): 300 streams p99 211-273 ms against 307-396 (docs/streaming.md,
 * session 51).
 */
export const STREAM_BEHIND_WAIT_MS = 8;

/** pino-compatible subset (Fastify's logger fits). */
export interface StreamLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

export interface StreamStats {
  /** Streams in progress (both transports). */
  activeStreams: number;
  /** Streams accepted since start. */
  streamsStarted: number;
  /** Streams ended, by outcome ('ok' or the error code). */
  streamsEnded: Record<string, number>;
  /** Times a stream stopped reading its input (models or input processing behind). */
  inputPauses: number;
}

const silentLog: StreamLogger = { info() {}, warn() {}, error() {} };

/** Only the defined fields of `o` (so that `{ maxStreams: undefined }` keeps the default). */
function defined<T extends object>(o: Partial<T>): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export class StreamHub {
  readonly limits: StreamLimits;
  readonly log: StreamLogger;
  /** @internal counters updated by the streams */
  readonly stats = { streamsStarted: 0, streamsEnded: {} as Record<string, number>, inputPauses: 0 };
  private readonly streams = new Set<LiveStream>();
  private readonly perKey = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;
  /** Gives the memory of ended streams back to the system after a burst of closes. */
  readonly trimmer = new MemoryTrimmer();
  private closing = false;

  constructor(
    readonly engine: InferenceEngine,
    limits: Partial<StreamLimits> = {},
    log: StreamLogger = silentLog,
  ) {
    this.limits = { ...DEFAULT_STREAM_LIMITS, ...defined(limits) };
    this.log = log;
    if (this.limits.maxQueuedResults < 2 * this.limits.maxWindowSteps) {
      throw new AurisError('INVALID_ARGUMENT', `maxQueuedResults (${this.limits.maxQueuedResults}) must be at least 2 x maxWindowSteps (${this.limits.maxWindowSteps})`);
    }
    // One timer for every stream's idle check (a timer per audio message would cost more).
    const period = Math.max(50, Math.min(1000, this.limits.configTimeoutMs / 4, this.limits.idleTimeoutMs > 0 ? this.limits.idleTimeoutMs / 4 : 1000));
    this.sweeper = setInterval(() => {
      this.endIdleStreams();
      this.trimmer.tick(Date.now());
    }, period);
    this.sweeper.unref();
  }

  /**
   * Admits a new stream for `owner` (total and per-key quota), or says why not. The stream
   * waits for configure() (gRPC: its first message; WebSocket: the query, at once).
   */
  open(owner: Owner, sink: StreamSink, transport: Transport): LiveStream | StreamError {
    if (this.closing) return { code: 'UNAVAILABLE', message: 'the server is shutting down' };
    if (this.streams.size >= this.limits.maxStreams) {
      return { code: 'TOO_MANY_STREAMS', message: `too many concurrent streams (limit ${this.limits.maxStreams})` };
    }
    const mine = this.perKey.get(owner.key_id) ?? 0;
    if (mine >= this.limits.maxStreamsPerKey) {
      return { code: 'TOO_MANY_STREAMS', message: `too many concurrent streams for this API key (limit ${this.limits.maxStreamsPerKey})` };
    }
    const s = new LiveStream(this, sink, owner, transport);
    this.streams.add(s);
    this.perKey.set(owner.key_id, mine + 1);
    this.stats.streamsStarted++;
    return s;
  }

  /** @internal a stream ended (called once per stream by LiveStream). */
  ended(s: LiveStream, outcome: string): void {
    if (!this.streams.delete(s)) return;
    const n = (this.perKey.get(s.owner.key_id) ?? 1) - 1;
    if (n > 0) this.perKey.set(s.owner.key_id, n);
    else this.perKey.delete(s.owner.key_id);
    this.stats.streamsEnded[outcome] = (this.stats.streamsEnded[outcome] ?? 0) + 1;
    this.trimmer.noteClosed();
  }

  /** Streams in progress, all or of one transport. */
  active(transport?: Transport): number {
    if (!transport) return this.streams.size;
    let n = 0;
    for (const s of this.streams) if (s.transport === transport) n++;
    return n;
  }

  /** Streams in progress for an API key (by key_id). */
  activeForKey(keyId: string): number {
    return this.perKey.get(keyId) ?? 0;
  }

  snapshot(): StreamStats {
    return { activeStreams: this.streams.size, streamsStarted: this.stats.streamsStarted, streamsEnded: { ...this.stats.streamsEnded }, inputPauses: this.stats.inputPauses };
  }

  /**
   * Graceful end of the open streams (of one transport, or all: then no new stream is
   * admitted): each stops reading, sends the results its audio gives (at most `waitMs`) and
   * ends with UNAVAILABLE.
   */
  async shutdown(waitMs: number, transport?: Transport): Promise<void> {
    if (!transport) this.closing = true;
    await Promise.all([...this.streams].filter((s) => !transport || s.transport === transport).map((s) => s.shutdown(waitMs)));
  }

  /** Drops the streams still open (forced shutdown). */
  abandon(transport?: Transport): void {
    for (const s of [...this.streams]) if (!transport || s.transport === transport) s.cancel('abandoned');
  }

  /** Stops the idle sweeper (the hub admits nothing more). */
  close(): void {
    this.closing = true;
    clearInterval(this.sweeper);
  }

  private endIdleStreams(): void {
    const now = Date.now();
    const { configTimeoutMs, idleTimeoutMs } = this.limits;
    for (const s of [...this.streams]) {
      if (s.awaitingConfig && configTimeoutMs > 0 && now - s.openedAt > configTimeoutMs) {
        s.fail(new Error(`no stream config within ${configTimeoutMs} ms`), 'IDLE_TIMEOUT');
      } else if (s.awaitingAudio && idleTimeoutMs > 0 && now - s.lastInputAt > idleTimeoutMs) {
        s.fail(new Error(`no audio for ${idleTimeoutMs} ms`), 'IDLE_TIMEOUT');
      }
    }
  }
}
