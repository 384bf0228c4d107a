/**
 * The gRPC streaming server: audioanalysis.v1.AudioAnalysis (Analyze, ListModels), the
 * standard health service (grpc.health.v1) and server reflection, on @grpc/grpc-js.
 *
 * Per Analyze call: x-api-key check (before anything is read), StreamConfig validation, then
 * a StreamSession fed with the audio messages. Flow control, per stream:
 * - input: audio is processed in slices of at most 64 KiB per event-loop turn; reading pauses
 *   (HTTP/2 flow control then holds the client back) while more than maxPendingInputBytes wait
 *   or the models are more than maxBacklogSteps behind;
 * - output: results go through call.write() while grpc-js accepts them; once it signals
 *   backpressure they wait in a per-stream queue until 'drain'; more than maxQueuedResults
 *   waiting ends the call with RESOURCE_EXHAUSTED (a client that does not read).
 * Cancellation, disconnection or a deadline frees the stream's native state at once.
 * Inference runs on the worker threads of the server's own InferenceEngine (never on the
 * event loop), so a busy stream cannot stall the others' I/O.
 */
import { randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation } from 'grpc-health-check';
import { reflectionPackageDefinition } from './reflection';
import { AurisError, errorCode } from '../analysis/errors';
import { STEP_MS } from '../analysis/options';
import { modelsToRun, policyFor, NO_SPEECH_LABEL, SILENCE_LABEL, UNKNOWN_LABEL } from '../analysis/policies';
import type { TimeStepResult } from '../analysis/postprocess';
import { InferenceEngine } from '../inference/engine';
import type { ModelInfo } from '../inference/registry';
import type { Owner } from '../jobs/service';
import { validateStreamConfig } from './config';
import {
  AnalyzeRequestMsg,
  ListModelsResponseMsg,
  ModelInfoMsg,
  SERVICE_NAME,
  serviceDefinition,
  StepResultMsg,
} from './proto';
import { StreamSession, StreamSummary } from '../pipeline/analyze-stream';

/** Resolves an API key to its owner (src/http/auth.ts ApiKeyRegistry fits). */
export interface KeyLookup {
  lookup(key: string): Owner | null;
}

/** pino-compatible subset (Fastify's logger fits). */
export interface GrpcLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

export interface GrpcServerOptions {
  /** API keys (the REST service's registry). */
  keys: KeyLookup;
  /** Inference engine; default: a dedicated one over modelsDir (its workers serve streams only). */
  engine?: InferenceEngine;
  /** Models directory for the default engine (default $AURIS_MODELS_DIR or <package>/models). */
  modelsDir?: string;
  /** Worker threads of the default engine (default: $AURIS_INFERENCE_THREADS or one per core). */
  inferenceThreads?: number;
  /** Most windows batched into one model call by the default engine (default 64). */
  maxBatch?: number;
  /** Concurrent Analyze calls; more get RESOURCE_EXHAUSTED (default 1000). */
  maxStreams?: number;
  /**
   * Results waiting for a client that does not read, per stream (default 1024). Must be at
   * least 2 x maxWindowSteps: one model call can complete that many output steps at once.
   */
  maxQueuedResults?: number;
  /** Steps the models may lag behind before reading pauses (default 256 = 16 s of audio). */
  maxBacklogSteps?: number;
  /** Received audio bytes waiting to be processed before reading pauses (default 1 MiB). */
  maxPendingInputBytes?: number;
  /**
   * A stream whose client sends faster than real time and does not take its results is
   * throttled (its input and models wait); if its output makes no progress for this long, the
   * call ends with RESOURCE_EXHAUSTED (default 30 000 ms).
   */
  maxStallMs?: number;
  /**
   * Audio a client may send ahead of wall-clock time (since its first audio) and still count
   * as a live source, ms (default 2000). Live sources are never throttled by their output:
   * their results queue up to maxQueuedResults.
   */
  realtimeSlackMs?: number;
  /** Largest output_period, ms (default 3 600 000). */
  maxOutputPeriodMs?: number;
  /** Most output steps per model call (default 256). */
  maxWindowSteps?: number;
  /**
   * Run models that ship a stateful streaming graph through it (default true): each step is
   * computed once instead of once per window it falls in. Same results; false is for comparisons.
   */
  statefulModels?: boolean;
  /** On close(): how long streams may take to end before the server is forced down, ms (default 5000). */
  shutdownGraceMs?: number;
  log?: GrpcLogger;
}

export interface GrpcServerStats {
  /** Analyze calls in progress. */
  activeStreams: number;
  /** Analyze calls accepted since start. */
  streamsStarted: number;
  /** Analyze calls ended, by outcome. */
  streamsEnded: Record<string, number>;
  /** Times a stream stopped reading its input (models or input processing behind). */
  inputPauses: number;
}

const SLICE_BYTES = 64 * 1024;
const ERROR_CODE_KEY = 'auris-error-code';
const STREAM_ID_KEY = 'auris-stream-id';

const silentLog: GrpcLogger = { info() {}, warn() {}, error() {} };

/** gRPC status for an auris error code. */
export function statusFor(code: string | undefined): grpc.status {
  switch (code) {
    case 'INVALID_ARGUMENT':
    case 'UNKNOWN_MODEL':
    case 'INVALID_CHANNEL':
    case 'EMPTY_AUDIO':
    case 'UNSUPPORTED_FORMAT':
    case 'CORRUPT_AUDIO':
      return grpc.status.INVALID_ARGUMENT;
    case 'UNAUTHENTICATED':
      return grpc.status.UNAUTHENTICATED;
    case 'RESOURCE_EXHAUSTED':
    case 'DURATION_LIMIT_EXCEEDED':
      return grpc.status.RESOURCE_EXHAUSTED;
    case 'UNAVAILABLE':
    case 'CLOSED':
      return grpc.status.UNAVAILABLE;
    case 'ABORTED':
      return grpc.status.CANCELLED;
    default:
      return grpc.status.INTERNAL;
  }
}

function statusError(code: grpc.status, details: string, aurisCode: string): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  metadata.set(ERROR_CODE_KEY, aurisCode);
  return { code, details, metadata };
}

/** The SPEC time-step result as a StepResult message. */
export function stepMessage(step: TimeStepResult): StepResultMsg {
  const msg: StepResultMsg = { timestamp: step.timestamp, results: step.results };
  if (step.raw) {
    const raw: Record<string, { values: Record<string, number> }> = {};
    for (const [name, values] of Object.entries(step.raw)) raw[name] = { values };
    msg.raw = raw;
  }
  return msg;
}

export function summaryMessage(s: StreamSummary): StepResultMsg {
  const models: Record<string, { fractions: Record<string, number> }> = {};
  for (const [name, fractions] of Object.entries(s.models)) models[name] = { fractions };
  return { timestamp: s.endTimestampMs, summary: { models, duration_ms: s.durationMs, steps: s.steps } };
}

/** Every label a model's time steps can carry (raw keys plus the rule labels). */
export function modelLabels(m: Pick<ModelInfo, 'name' | 'rawKeys'>): string[] {
  const policy = policyFor(m.name, m.rawKeys);
  const labels = [...m.rawKeys];
  if (policy.unknownThreshold !== undefined) labels.push(UNKNOWN_LABEL);
  if (policy.speechGated) labels.push(NO_SPEECH_LABEL);
  labels.push(SILENCE_LABEL);
  return labels;
}

export function listModelsResponse(engine: Pick<InferenceEngine, 'registry'>): ListModelsResponseMsg {
  const models = engine.registry.list().map((m): ModelInfoMsg => {
    const policy = policyFor(m.name, m.rawKeys);
    const also = modelsToRun([m.name]).filter((n) => n !== m.name && engine.registry.has(n));
    const lookahead = Math.max(m.lookaheadMs, ...also.map((n) => engine.registry.get(n).lookaheadMs));
    return {
      name: m.name,
      version: m.version,
      labels: modelLabels(m),
      raw_keys: [...m.rawKeys],
      summary_keys: policy.summaryClasses.map((c) => `${c}_fraction`),
      receptive_field_ms: m.receptiveFieldMs,
      lookahead_ms: m.lookaheadMs,
      left_context_steps: m.context.leftSteps,
      right_context_steps: m.context.rightSteps,
      also_runs: also,
      stream_lookahead_ms: lookahead,
      placeholder: m.placeholder,
    };
  });
  return { models, step_ms: STEP_MS, sample_rate: 16000 };
}

type AnalyzeStream = grpc.ServerDuplexStream<AnalyzeRequestMsg, StepResultMsg>;

export class AnalysisGrpcServer {
  readonly server: grpc.Server;
  readonly engine: InferenceEngine;
  readonly health: HealthImplementation;
  private readonly ownEngine: boolean;
  private readonly calls = new Set<AnalyzeCall>();
  private closing: Promise<void> | undefined;
  private _port = 0;
  /** @internal */
  readonly _stats = { streamsStarted: 0, streamsEnded: {} as Record<string, number>, inputPauses: 0 };
  readonly limits: Required<
    Pick<GrpcServerOptions, 'maxStreams' | 'maxQueuedResults' | 'maxBacklogSteps' | 'maxPendingInputBytes' | 'maxStallMs' | 'realtimeSlackMs' | 'maxOutputPeriodMs' | 'maxWindowSteps' | 'shutdownGraceMs'>
  >;
  readonly log: GrpcLogger;

  private constructor(
    readonly options: GrpcServerOptions,
    engine: InferenceEngine,
    ownEngine: boolean,
  ) {
    this.engine = engine;
    this.ownEngine = ownEngine;
    this.log = options.log ?? silentLog;
    this.limits = {
      maxStreams: options.maxStreams ?? 1000,
      maxQueuedResults: options.maxQueuedResults ?? 1024,
      maxBacklogSteps: options.maxBacklogSteps ?? 256,
      maxPendingInputBytes: options.maxPendingInputBytes ?? 1024 * 1024,
      maxStallMs: options.maxStallMs ?? 30_000,
      realtimeSlackMs: options.realtimeSlackMs ?? 2000,
      maxOutputPeriodMs: options.maxOutputPeriodMs ?? 3_600_000,
      maxWindowSteps: options.maxWindowSteps ?? 256,
      shutdownGraceMs: options.shutdownGraceMs ?? 5000,
    };
    if (this.limits.maxQueuedResults < 2 * this.limits.maxWindowSteps) {
      throw new AurisError('INVALID_ARGUMENT', `maxQueuedResults (${this.limits.maxQueuedResults}) must be at least 2 x maxWindowSteps (${this.limits.maxWindowSteps})`);
    }
    this.server = new grpc.Server({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
    this.server.addService(serviceDefinition(), {
      Analyze: (call: AnalyzeStream) => this.analyze(call),
      ListModels: (call: grpc.ServerUnaryCall<unknown, ListModelsResponseMsg>, cb: grpc.sendUnaryData<ListModelsResponseMsg>) =>
        this.listModels(call, cb),
    });
    this.health = new HealthImplementation({ '': 'NOT_SERVING', [SERVICE_NAME]: 'NOT_SERVING' });
    this.health.addToServer(this.server);
    new ReflectionService(reflectionPackageDefinition()).addToServer(this.server); // lists the health service too
  }

  /** Loads the models (a dedicated engine unless one is given) and builds the server (not listening yet). */
  static async create(options: GrpcServerOptions): Promise<AnalysisGrpcServer> {
    if (options.engine) return new AnalysisGrpcServer(options, options.engine, false);
    const engineOptions: Parameters<typeof InferenceEngine.create>[0] = { preload: 'all', maxBatch: options.maxBatch ?? 64 };
    if (options.modelsDir !== undefined) engineOptions.modelsDir = options.modelsDir;
    if (options.inferenceThreads !== undefined) engineOptions.size = options.inferenceThreads;
    const engine = await InferenceEngine.create(engineOptions);
    return new AnalysisGrpcServer(options, engine, true);
  }

  /** Binds `host:port` (port 0: a free one) and starts serving; resolves with the port. */
  listen(host = '127.0.0.1', port = 50051): Promise<number> {
    const address = host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
    return new Promise((resolve, reject) => {
      this.server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, bound) => {
        if (err) return reject(err);
        this._port = bound;
        this.health.setStatus('', 'SERVING');
        this.health.setStatus(SERVICE_NAME, 'SERVING');
        resolve(bound);
      });
    });
  }

  get port(): number {
    return this._port;
  }

  stats(): GrpcServerStats {
    return {
      activeStreams: this.calls.size,
      streamsStarted: this._stats.streamsStarted,
      streamsEnded: { ...this._stats.streamsEnded },
      inputPauses: this._stats.inputPauses,
    };
  }

  /**
   * Graceful shutdown: health goes NOT_SERVING, new calls are refused, every open stream
   * stops reading, sends the results of the audio it already has, and ends with UNAVAILABLE;
   * after shutdownGraceMs the server is forced down. Closes the engine if it made it.
   */
  close(graceMs = this.limits.shutdownGraceMs): Promise<void> {
    this.closing ??= (async () => {
      this.health.setStatus('', 'NOT_SERVING');
      this.health.setStatus(SERVICE_NAME, 'NOT_SERVING');
      const deadline = Date.now() + graceMs;
      await Promise.all([...this.calls].map((c) => c.shutdown(Math.min(1000, graceMs))));
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.server.forceShutdown();
          resolve();
        }, Math.max(0, deadline - Date.now()));
        this.server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      for (const c of [...this.calls]) c.abandon();
      if (this.ownEngine) await this.engine.close();
    })();
    return this.closing;
  }

  get isClosing(): boolean {
    return this.closing !== undefined;
  }

  /** The owner of the call's x-api-key, or an error status. */
  private authenticate(metadata: grpc.Metadata): { owner: Owner } | { error: Partial<grpc.StatusObject> } {
    const values = metadata.get('x-api-key');
    if (values.length === 0) {
      return { error: statusError(grpc.status.UNAUTHENTICATED, 'the x-api-key metadata entry is required', 'MISSING_API_KEY') };
    }
    const key = String(values[0]);
    const owner = this.options.keys.lookup(key);
    if (!owner) return { error: statusError(grpc.status.UNAUTHENTICATED, 'the x-api-key is not valid', 'INVALID_API_KEY') };
    return { owner };
  }

  private listModels(call: grpc.ServerUnaryCall<unknown, ListModelsResponseMsg>, cb: grpc.sendUnaryData<ListModelsResponseMsg>): void {
    const auth = this.authenticate(call.metadata);
    if ('error' in auth) return cb(auth.error as grpc.ServiceError);
    cb(null, listModelsResponse(this.engine));
  }

  private analyze(call: AnalyzeStream): void {
    const auth = this.authenticate(call.metadata);
    if ('error' in auth) {
      call.emit('error', auth.error);
      return;
    }
    if (this.closing) {
      call.emit('error', statusError(grpc.status.UNAVAILABLE, 'the server is shutting down', 'UNAVAILABLE'));
      return;
    }
    if (this.calls.size >= this.limits.maxStreams) {
      call.emit('error', statusError(grpc.status.RESOURCE_EXHAUSTED, `too many concurrent streams (limit ${this.limits.maxStreams})`, 'TOO_MANY_STREAMS'));
      return;
    }
    const c = new AnalyzeCall(this, call, auth.owner);
    this.calls.add(c);
    this._stats.streamsStarted++;
    c.start();
  }

  /** @internal */
  ended(c: AnalyzeCall, outcome: string): void {
    if (!this.calls.delete(c)) return;
    this._stats.streamsEnded[outcome] = (this._stats.streamsEnded[outcome] ?? 0) + 1;
  }
}

type CallState = 'config' | 'audio' | 'ending' | 'done';

/** One Analyze call. */
class AnalyzeCall {
  private state: CallState = 'config';
  private session: StreamSession | undefined;
  private streamId = '';
  private readonly input: Buffer[] = [];
  private inputBytes = 0;
  private inputEnded = false;
  private processing = false;
  private paused = false;
  private out: StepResultMsg[] = [];
  /** grpc-js signalled backpressure; results wait in `out` until 'drain'. */
  private blocked = false;
  /** Output backpressure of a faster-than-real-time client: input and models wait. */
  private throttled = false;
  private stallTimer: NodeJS.Timeout | undefined;
  private firstAudioAt = 0;
  private shuttingDown: (() => void) | undefined;
  private onDone: (() => void) | undefined;
  private readonly startedAt = Date.now();

  constructor(
    private readonly srv: AnalysisGrpcServer,
    private readonly call: AnalyzeStream,
    private readonly owner: Owner,
  ) {}

  start(): void {
    const call = this.call;
    call.on('data', (req: AnalyzeRequestMsg) => this.onRequest(req));
    call.on('end', () => {
      this.inputEnded = true;
      this.process();
    });
    call.on('cancelled', () => this.cleanup('cancelled'));
    call.on('drain', () => this.flush());
  }

  private onRequest(req: AnalyzeRequestMsg): void {
    if (this.state === 'done' || this.shuttingDown) return;
    if (this.state === 'config') {
      if (!req.config) {
        this.fail(new AurisError('INVALID_ARGUMENT', 'the first message must carry config (StreamConfig); audio may only follow it'));
        return;
      }
      this.configure(req);
      return;
    }
    if (req.config) {
      this.fail(new AurisError('INVALID_ARGUMENT', 'config may only be sent once, in the first message'));
      return;
    }
    const audio = req.audio;
    if (!audio || audio.length === 0 || this.state !== 'audio') return;
    if (this.firstAudioAt === 0) this.firstAudioAt = performance.now();
    this.input.push(audio);
    this.inputBytes += audio.length;
    if (!this.processing) this.process();
  }

  private configure(req: AnalyzeRequestMsg): void {
    try {
      const cfg = validateStreamConfig(req.config!, this.srv.engine.models(), this.srv.limits.maxOutputPeriodMs);
      this.streamId = cfg.streamId || `s-${randomUUID()}`;
      this.session = new StreamSession(
        this.srv.engine,
        { ...cfg, maxWindowSteps: this.srv.limits.maxWindowSteps, statefulModels: this.srv.options.statefulModels ?? true },
        {
          onStep: (step) => this.write(stepMessage(step)),
          onError: (e) => this.fail(e),
          onProgress: () => this.updateFlow(),
        },
      );
      const md = new grpc.Metadata();
      md.set(STREAM_ID_KEY, this.streamId);
      this.call.sendMetadata(md);
      this.state = 'audio';
      this.srv.log.debug?.({ stream_id: this.streamId, key_id: this.owner.key_id, models: cfg.models, sample_rate: cfg.sampleRate }, 'stream started');
    } catch (e) {
      this.fail(e);
    }
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
        if (this.isDone()) return;
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

  private isDone(): boolean {
    return this.state === 'done';
  }

  private endOfAudio(): void {
    this.state = 'ending';
    this.session!.end().then(
      (summary) => {
        if (this.state === 'done') return;
        if (summary) this.write(summaryMessage(summary));
        this.finishOk();
      },
      (e: unknown) => {
        if (errorCode(e) === 'EMPTY_AUDIO') {
          this.fail(new AurisError('INVALID_ARGUMENT', 'the stream ended without any audio sample'), 'EMPTY_AUDIO');
        } else this.fail(e);
      },
    );
  }

  /**
   * Pauses reading while too much waits (input bytes, model backlog) or while the output is
   * throttled; resumes below half.
   */
  private updateFlow(): void {
    if (this.state === 'done' || !this.session) return;
    const { maxPendingInputBytes, maxBacklogSteps } = this.srv.limits;
    const backlog = this.session.backlogSteps;
    if (!this.paused && (this.inputBytes > maxPendingInputBytes || backlog > maxBacklogSteps || this.throttled)) {
      this.paused = true;
      this.srv._stats.inputPauses++;
      this.call.pause();
    } else if (this.paused && this.inputBytes <= maxPendingInputBytes / 2 && backlog <= maxBacklogSteps / 2 && !this.throttled && !this.shuttingDown) {
      this.paused = false;
      this.call.resume();
    }
    if (this.shuttingDown && this.state === 'audio' && backlog === 0) this.shuttingDown();
  }

  /**
   * Output with backpressure. Results go to grpc-js while it accepts them, then wait in `out`
   * until 'drain'. More than maxQueuedResults waiting: the client is not reading, the call
   * ends with RESOURCE_EXHAUSTED. A client that sends faster than real time is throttled
   * instead while its output is blocked (no new model calls, no reading), so that it is paced
   * by its own reading; if it takes no result for maxStallMs, RESOURCE_EXHAUSTED too.
   */
  private write(msg: StepResultMsg): void {
    if (this.state === 'done') return;
    if (this.blocked || this.out.length > 0) {
      this.out.push(msg);
      if (this.out.length > this.srv.limits.maxQueuedResults) {
        this.fail(
          new Error(`the client is not reading its results: more than ${this.srv.limits.maxQueuedResults} results waiting`),
          'RESOURCE_EXHAUSTED',
          grpc.status.RESOURCE_EXHAUSTED,
        );
      }
      return;
    }
    if (!this.call.write(msg)) {
      this.blocked = true;
      if (this.aheadOfRealTime()) this.throttle(true);
    }
  }

  private flush(): void {
    this.blocked = false;
    while (this.out.length > 0 && this.state !== 'done') {
      if (!this.call.write(this.out.shift()!)) {
        this.blocked = true;
        this.armStallTimer();
        return;
      }
    }
    if (this.throttled) this.throttle(false);
  }

  /** True when more audio has arrived than wall-clock time has passed since the first (plus slack). */
  private aheadOfRealTime(): boolean {
    const s = this.session;
    if (!s || this.firstAudioAt === 0) return false;
    const audioMs = (s.frames / s.options.sampleRate) * 1000;
    return audioMs > performance.now() - this.firstAudioAt + this.srv.limits.realtimeSlackMs;
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
    const ms = this.srv.limits.maxStallMs;
    this.stallTimer = setTimeout(() => {
      this.fail(new Error(`the client is not reading its results: no progress for ${ms} ms`), 'RESOURCE_EXHAUSTED', grpc.status.RESOURCE_EXHAUSTED);
    }, ms);
    this.stallTimer.unref();
  }

  private finishOk(): void {
    if (this.state === 'done') return;
    this.state = 'done';
    // grpc-js keeps these in its buffer (bounded by maxQueuedResults) and sends the status after them.
    for (const m of this.out) this.call.write(m);
    this.out = [];
    this.call.end();
    this.cleanup('ok');
  }

  /** Ends the call with an error status (results already handed to grpc-js are delivered first). */
  private fail(e: unknown, aurisCode?: string, status?: grpc.status): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.out = [];
    const code = aurisCode ?? errorCode(e) ?? 'INTERNAL';
    const grpcStatus = status ?? statusFor(code);
    const message = e instanceof Error ? e.message : String(e);
    if (grpcStatus === grpc.status.INTERNAL) this.srv.log.error({ stream_id: this.streamId, err: e }, 'stream failed');
    this.call.emit('error', statusError(grpcStatus, grpcStatus === grpc.status.INTERNAL ? `internal error: ${message}` : message, code));
    this.cleanup(code);
  }

  /**
   * Server shutdown: stop reading, send the results the audio received so far gives (waiting
   * at most `waitMs` for the models), then end with UNAVAILABLE. A stream already flushing its
   * end of audio may finish normally within `waitMs`.
   */
  shutdown(waitMs: number): Promise<void> {
    if (this.state === 'done') return Promise.resolve();
    if (!this.paused) this.call.pause();
    this.paused = true;
    this.input.length = 0;
    this.inputBytes = 0;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.shuttingDown = undefined;
        this.fail(new Error('the server is shutting down; results were sent up to the last complete step'), 'UNAVAILABLE', grpc.status.UNAVAILABLE);
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

  /** Forced shutdown: drop the stream. */
  abandon(): void {
    this.cleanup('abandoned');
  }

  private cleanup(outcome: string): void {
    if (this.state !== 'done') this.state = 'done';
    if (this.stallTimer) clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
    this.input.length = 0;
    this.inputBytes = 0;
    this.out = [];
    const s = this.session;
    if (s && !s.isClosed) {
      s.close();
      this.srv.log.debug?.(
        { stream_id: this.streamId, outcome, steps: s.stepsSent, frames: s.frames, ms: Date.now() - this.startedAt },
        'stream ended',
      );
    }
    this.srv.ended(this, outcome);
    const f = this.onDone;
    this.onDone = undefined;
    f?.();
  }
}
