/**
 * LiveStream: one live stream between a transport (gRPC call, WebSocket) and a StreamSession,
 * with the flow control every transport needs (the transport only frames messages):
 *
 * - input: audio is fed to the session in slices of at most 64 KiB per event-loop turn;
 *   reading pauses (the transport's own flow control then holds the client back) while more
 *   than maxPendingInputBytes wait or the models are more than maxBacklogSteps behind;
 * - output: results go to the transport while it accepts them; once it signals backpressure
 *   they wait in a per-stream queue until drained(); more than maxQueuedResults waiting ends
 *   the stream with RESOURCE_EXHAUSTED (a client that does not read). A client that sends
 *   faster than real time is throttled instead while its output is blocked (no new model
 *   calls, no reading), so that it is paced by its own reading; if it takes no result for
 *   maxStallMs, RESOURCE_EXHAUSTED too;
 * - idle: the hub ends streams that send no config or no audio for too long (IDLE_TIMEOUT).
 *
 * Every end (normal, error, cancel, shutdown) frees the session's native state at once.
 */
import { AurisError, errorCode, isServerFault } from '../errors';
import type { TimeStepResult } from '../analysis/postprocess';
import type { Owner } from '../jobs/service';
import { StreamSession, type StreamSessionOptions, type StreamSummary } from '../pipeline/analyze-stream';
import type { StreamHub } from './hub';

/** What a stream sends, in order: steps, then (when asked) the summary, then the end. */
export type StreamOutput = { type: 'step'; step: TimeStepResult; /** false: a provisional result (docs/streaming.md) */ final: boolean } | { type: 'summary'; summary: StreamSummary };

/** Why a stream ended badly: a stable auris error code and a message for the client. */
export interface StreamError {
  code: string;
  message: string;
}

/** What a transport does for a LiveStream. */
export interface StreamSink {
  /** Sends one output; false when the transport's buffer is full (call drained() once it has room). */
  send(out: StreamOutput): boolean;
  /** The stream was configured (gRPC sends the stream id as metadata). */
  started?(streamId: string): void;
  pauseInput(): void;
  resumeInput(): void;
  /** Normal end, after every output was handed to send(). */
  end(): void;
  /** Error end (outputs already handed to send() are delivered first where the transport can). */
  fail(error: StreamError): void;
}

export type Transport = 'grpc' | 'websocket';

type State = 'config' | 'audio' | 'ending' | 'done';

const SLICE_BYTES = 64 * 1024;

export class LiveStream {
  private state: State = 'config';
  private session: StreamSession | undefined;
  streamId = '';
  private readonly input: Uint8Array[] = [];
  private inputBytes = 0;
  private inputEnded = false;
  private processing = false;
  private paused = false;
  private out: StreamOutput[] = [];
  /** The transport signalled backpressure; outputs wait in `out` until drained(). */
  private blocked = false;
  /** Output backpressure of a faster-than-real-time client: input and models wait. */
  private throttled = false;
  private stallTimer: NodeJS.Timeout | undefined;
  private firstAudioAt = 0;
  private shuttingDown: (() => void) | undefined;
  private onDone: (() => void) | undefined;
  readonly openedAt = Date.now();
  /** Last time the client sent something (for the idle timeout), ms. */
  lastInputAt = Date.now();

  constructor(
    private readonly hub: StreamHub,
    private readonly sink: StreamSink,
    readonly owner: Owner,
    readonly transport: Transport,
  ) {}

  /** Waiting for its config (gRPC's first message). */
  get awaitingConfig(): boolean {
    return this.state === 'config';
  }

  /** Waiting for audio from the client (not paused by the server, not ending). */
  get awaitingAudio(): boolean {
    return this.state === 'audio' && !this.paused && !this.inputEnded;
  }

  get isDone(): boolean {
    return this.state === 'done';
  }

  /** Starts the analysis (options validated by the transport); errors end the stream. */
  configure(options: StreamSessionOptions, streamId: string): void {
    if (this.state !== 'config') return;
    try {
      const { limits } = this.hub;
      this.streamId = streamId;
      this.session = new StreamSession(
        this.hub.engine,
        { ...options, maxWindowSteps: limits.maxWindowSteps, statefulModels: limits.statefulModels },
        {
          onStep: (step, final) => this.write({ type: 'step', step, final }),
          onError: (e) => this.fail(e),
          onProgress: () => this.updateFlow(),
        },
      );
      this.state = 'audio';
      this.lastInputAt = Date.now();
      this.sink.started?.(streamId);
      this.hub.log.debug?.({ stream_id: streamId, transport: this.transport, key_id: this.owner.key_id, models: options.models, sample_rate: options.sampleRate }, 'stream started');
    } catch (e) {
      this.fail(e);
    }
  }

  /** Audio bytes from the client (any size). */
  audio(bytes: Uint8Array): void {
    if (this.state !== 'audio' || this.shuttingDown || this.inputEnded || bytes.length === 0) return;
    this.lastInputAt = Date.now();
    if (this.firstAudioAt === 0) this.firstAudioAt = performance.now();
    this.input.push(bytes);
    this.inputBytes += bytes.length;
    if (!this.processing) this.process();
  }

  /** The client sent its last audio: flush and end (with the summary when asked). */
  endInput(): void {
    if (this.inputEnded) return;
    this.inputEnded = true;
    this.process();
  }

  /** The transport has room again. */
  drained(): void {
    this.blocked = false;
    while (this.out.length > 0 && this.state !== 'done') {
      if (!this.sink.send(this.out.shift()!)) {
        this.blocked = true;
        this.armStallTimer();
        return;
      }
    }
    if (this.throttled) this.throttle(false);
  }

  /** The client went away (cancel, disconnect, deadline): free everything now. */
  cancel(outcome = 'cancelled'): void {
    if (this.state !== 'done') this.cleanup(outcome);
  }

  /** Ends the stream with an error (sent to the client where the transport still can). */
  fail(e: unknown, code?: string): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.out = [];
    const aurisCode = code ?? errorCode(e) ?? 'INTERNAL';
    const message = e instanceof Error ? e.message : String(e);
    const internal = isServerFault(aurisCode); // not the client's doing nor expected: logged as a server error
    if (internal) this.hub.log.error({ stream_id: this.streamId, transport: this.transport, err: e }, 'stream failed');
    this.sink.fail({ code: aurisCode, message: internal ? `internal error: ${message}` : message });
    this.cleanup(aurisCode);
  }

  /**
   * Server shutdown: stop reading, send the results the audio received so far gives (waiting
   * at most `waitMs` for the models), then end with UNAVAILABLE. A stream already flushing its
   * end of audio may finish normally within `waitMs`.
   */
  shutdown(waitMs: number): Promise<void> {
    if (this.state === 'done') return Promise.resolve();
    if (!this.paused) this.sink.pauseInput();
    this.paused = true;
    this.input.length = 0;
    this.inputBytes = 0;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.shuttingDown = undefined;
        this.fail(new Error('the server is shutting down; results were sent up to the last complete step'), 'UNAVAILABLE');
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      this.shuttingDown = done;
      this.onDone = () => {
        clearTimeout(timer);
        resolve();
      };
      if (this.state === 'ending') return;
      if (!this.session || this.state !== 'audio' || this.session.backlogSteps === 0) done();
    });
  }

  /** Feeds queued audio to the session, at most SLICE_BYTES per event-loop turn. */
  private process(): void {
    if (this.state === 'done' || !this.session) {
      if (this.inputEnded && this.state === 'config') this.fail(new AurisError('INVALID_ARGUMENT', 'the stream ended before its config message'));
      return;
    }
    this.processing = true;
    let budget = SLICE_BYTES;
    try {
      while (this.input.length > 0 && budget > 0) {
        const buf = this.input[0]!;
        const piece = buf.length <= budget ? buf : buf.subarray(0, budget);
        if (piece === buf) this.input.shift();
        else this.input[0] = buf.subarray(budget);
        this.inputBytes -= piece.length;
        budget -= piece.length;
        this.session.push(piece);
        if (this.isDone) return;
      }
    } catch (e) {
      this.fail(e);
      return;
    }
    this.updateFlow();
    if (this.input.length > 0) {
      setImmediate(() => this.process());
      return;
    }
    this.processing = false;
    if (this.inputEnded && this.state === 'audio' && !this.shuttingDown) this.endOfAudio();
  }

  private endOfAudio(): void {
    this.state = 'ending';
    this.session!.end().then(
      (summary) => {
        if (this.state === 'done') return;
        if (summary) this.write({ type: 'summary', summary });
        this.finishOk();
      },
      (e: unknown) => {
        if (errorCode(e) === 'EMPTY_AUDIO') this.fail(new AurisError('INVALID_ARGUMENT', 'the stream ended without any audio sample'), 'EMPTY_AUDIO');
        else this.fail(e);
      },
    );
  }

  /** Pauses reading while too much waits (input bytes, model backlog) or while the output is throttled; resumes below half. */
  private updateFlow(): void {
    if (this.state === 'done' || !this.session) return;
    const { maxPendingInputBytes, maxBacklogSteps } = this.hub.limits;
    const backlog = this.session.backlogSteps;
    if (!this.paused && (this.inputBytes > maxPendingInputBytes || backlog > maxBacklogSteps || this.throttled)) {
      this.paused = true;
      this.hub.stats.inputPauses++;
      this.sink.pauseInput();
    } else if (this.paused && this.inputBytes <= maxPendingInputBytes / 2 && backlog <= maxBacklogSteps / 2 && !this.throttled && !this.shuttingDown) {
      this.paused = false;
      this.lastInputAt = Date.now(); // the client could not send while paused
      this.sink.resumeInput();
    }
    if (this.shuttingDown && this.state === 'audio' && backlog === 0) this.shuttingDown();
  }

  /** Output with backpressure (see the file comment). */
  private write(out: StreamOutput): void {
    if (this.state === 'done') return;
    if (this.blocked || this.out.length > 0) {
      this.out.push(out);
      const max = this.hub.limits.maxQueuedResults;
      if (this.out.length > max) this.fail(new Error(`the client is not reading its results: more than ${max} results waiting`), 'RESOURCE_EXHAUSTED');
      return;
    }
    if (!this.sink.send(out)) {
      this.blocked = true;
      if (this.aheadOfRealTime()) this.throttle(true);
    }
  }

  /** True when more audio has arrived than wall-clock time has passed since the first (plus slack). */
  private aheadOfRealTime(): boolean {
    const s = this.session;
    if (!s || this.firstAudioAt === 0) return false;
    const audioMs = (s.frames / s.options.sampleRate) * 1000;
    return audioMs > performance.now() - this.firstAudioAt + this.hub.limits.realtimeSlackMs;
  }

  private throttle(on: boolean): void {
    if (this.state === 'done' || on === this.throttled) return;
    this.throttled = on;
    this.session?.hold(on);
    if (on) this.armStallTimer();
    else if (this.stallTimer) {
      clearTimeout(this.stallTimer);
      this.stallTimer = undefined;
    }
    this.updateFlow();
  }

  /** (Re)starts the no-progress timer of a throttled stream. */
  private armStallTimer(): void {
    if (!this.throttled) return;
    if (this.stallTimer) clearTimeout(this.stallTimer);
    const ms = this.hub.limits.maxStallMs;
    this.stallTimer = setTimeout(() => this.fail(new Error(`the client is not reading its results: no progress for ${ms} ms`), 'RESOURCE_EXHAUSTED'), ms);
    this.stallTimer.unref();
  }

  private finishOk(): void {
    if (this.state === 'done') return;
    this.state = 'done';
    // The transport keeps these in its buffer (bounded by maxQueuedResults) and ends after them.
    for (const m of this.out) this.sink.send(m);
    this.out = [];
    this.sink.end();
    this.cleanup('ok');
  }

  private cleanup(outcome: string): void {
    this.state = 'done';
    if (this.stallTimer) clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
    this.input.length = 0;
    this.inputBytes = 0;
    this.out = [];
    const s = this.session;
    if (s && !s.isClosed) {
      s.close();
      this.hub.log.debug?.({ stream_id: this.streamId, transport: this.transport, outcome, steps: s.stepsSent, frames: s.frames, ms: Date.now() - this.openedAt }, 'stream ended');
    }
    this.hub.ended(this, outcome);
    const f = this.onDone;
    this.onDone = undefined;
    f?.();
  }
}
