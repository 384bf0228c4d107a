/**
 * The gRPC streaming server: audioanalysis.v1.AudioAnalysis (Analyze, ListModels), the
 * standard health service (grpc.health.v1) and server reflection, on @grpc/grpc-js.
 *
 * Per Analyze call: x-api-key check (before anything is read), admission by the StreamHub
 * (total and per-key stream quota, shared with the WebSocket transport), StreamConfig
 * validation, then a LiveStream (src/streaming/live-stream.ts: flow control, idle timeouts,
 * the StreamSession) fed with the audio messages. gRPC only frames: HTTP/2 flow control holds
 * a client back while its stream pauses reading; grpc-js's write()/'drain' is the output
 * backpressure. Cancellation, disconnection or a deadline frees the stream's native state at
 * once. Inference runs on the worker threads of the stream engine (never on the event loop).
 */
import { randomUUID } from 'node:crypto';
import type * as http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation } from 'grpc-health-check';
import { reflectionPackageDefinition } from './reflection';
import { AurisError, grpcStatusName } from '../errors';
import { STEP_MS } from '../analysis/options';
import { modelsToRun, policyFor, NO_SPEECH_LABEL, SILENCE_LABEL, UNKNOWN_LABEL } from '../analysis/policies';
import type { Segment, TimeStepResult } from '../analysis/postprocess';
import type { InferenceEngine } from '../inference/engine';
import type { ModelInfo } from '../inference/registry';
import type { AuthFailureThrottle } from '../http/auth-throttle';
import type { Owner } from '../jobs/service';
import { validateStreamConfig } from './config';
import { GrpcConnectionGate, type ConnectionLimits, type ConnectionStats } from './connections';
import {
  AnalyzeRequestMsg,
  ListModelsResponseMsg,
  ModelInfoMsg,
  SERVICE_NAME,
  serviceDefinition,
  StepResultMsg,
} from './proto';
import type { StreamSummary } from '../pipeline/analyze-stream';
import { createStreamEngine } from '../streaming/engine';
import { StreamHub, type StreamLimits, type StreamLogger, type StreamStats } from '../streaming/hub';
import type { LiveStream, StreamError, StreamOutput, StreamSink } from '../streaming/live-stream';

/** Resolves an API key to its owner (src/http/auth.ts ApiKeyRegistry fits). */
export interface KeyLookup {
  lookup(key: string): Owner | null;
}

/** pino-compatible subset (Fastify's logger fits). */
export type GrpcLogger = StreamLogger;

export interface GrpcServerOptions extends Partial<StreamLimits> {
  /** API keys (the REST service's registry). */
  keys: KeyLookup;
  /** The live-stream hub shared with the other transports (src/app.ts); default: one of this server's own, over `engine`. */
  hub?: StreamHub;
  /** Inference engine of its own hub; default: a dedicated one over modelsDir (its workers serve streams only). */
  engine?: InferenceEngine;
  /** Models directory for the default engine (default $AURIS_MODELS_DIR or <package>/models). */
  modelsDir?: string;
  /** Workers of the default engine that never run a pretrained encoder (default: $AURIS_INFERENCE_THREADS, else one per core less the encoder lanes: src/inference/env.ts streamWorkers). */
  inferenceThreads?: number;
  /** Most windows batched into one model call by the default engine (default 64). */
  maxBatch?: number;
  /** On close(): how long streams may take to end before the server is forced down, ms (default 5000). */
  shutdownGraceMs?: number;
  /**
   * Failed-authentication throttle per client address, shared with REST and WebSocket (src/app.ts), so
   * a key cannot be guessed faster over gRPC. Default: none.
   */
  authThrottle?: Pick<AuthFailureThrottle, 'failure'>;
  /** Connection caps and the handshake timeout of the gRPC port (src/grpc/connections.ts); defaults: DEFAULT_CONNECTION_LIMITS. */
  connections?: Partial<ConnectionLimits>;
  /** A connection without a call for this long is closed, ms (default 300000). */
  idleConnectionMs?: number;
  /** Each connection's HTTP/2 receive window, shared by its streams, bytes (default 16 MiB: DEFAULT_CONNECTION_WINDOW_BYTES). */
  connectionWindowBytes?: number;
  log?: GrpcLogger;
}

/** Receive window of a gRPC connection: ~8 s of 16 kHz audio for 64 streams sharing it, so no pause of the server's event loop holds clients back. */
export const DEFAULT_CONNECTION_WINDOW_BYTES = 16 * 1024 * 1024;

/** Connection limits when none are given (`auris serve` passes its config's, src/config.ts). */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = { maxConnections: 1000, maxConnectionsPerAddress: 64, handshakeTimeoutMs: 10_000 };

/** Stream statistics of this server's hub (both transports when the hub is shared). */
export type GrpcServerStats = StreamStats;

/** The client address of a gRPC peer string ("ipv4:127.0.0.1:5123", "ipv6:[::1]:5123"). */
export function peerAddress(peer: string): string {
  const rest = peer.replace(/^(ipv4|ipv6):/, '');
  const v6 = /^\[([^\]]+)\](?::\d+)?$/.exec(rest);
  if (v6) return v6[1]!;
  return rest.replace(/:\d+$/, '');
}

const ERROR_CODE_KEY = 'auris-error-code';
const STREAM_ID_KEY = 'auris-stream-id';

/** gRPC status for an auris error code: its row of the catalogue (src/errors.ts); INTERNAL when it has none. */
export function statusFor(code: string | undefined): grpc.status {
  return grpc.status[grpcStatusName(code)];
}

/** The status a call ends with for an auris error code: the catalogue's status, the code in the trailing metadata. */
function statusError(aurisCode: string, details: string): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  metadata.set(ERROR_CODE_KEY, aurisCode);
  return { code: statusFor(aurisCode), details, metadata };
}

/** The SPEC time-step result as a StepResult message. */
export function stepMessage(step: TimeStepResult, final = true): StepResultMsg {
  const msg: StepResultMsg = { timestamp: step.timestamp, results: step.results, final };
  if (step.raw) {
    const raw: Record<string, { values: Record<string, number> }> = {};
    for (const [name, values] of Object.entries(step.raw)) raw[name] = { values };
    msg.raw = raw;
  }
  return msg;
}

/** The end-of-stream message: the summary and/or the transitions, as asked. */
export function summaryMessage(s: StreamSummary): StepResultMsg {
  const msg: StepResultMsg = { timestamp: s.endTimestampMs };
  if (s.models) {
    const models: Record<string, { fractions: Record<string, number> }> = {};
    for (const [name, fractions] of Object.entries(s.models)) models[name] = { fractions };
    msg.summary = { models, duration_ms: s.durationMs, steps: s.steps };
  }
  if (s.transitions) {
    const transitions: Record<string, { segments: Segment[] }> = {};
    for (const [name, segments] of Object.entries(s.transitions)) transitions[name] = { segments };
    msg.transitions = transitions;
  }
  return msg;
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
  readonly hub: StreamHub;
  readonly engine: InferenceEngine;
  readonly health: HealthImplementation;
  private readonly ownEngine: boolean;
  private readonly ownHub: boolean;
  private closing: Promise<void> | undefined;
  private _port = 0;
  private gate: GrpcConnectionGate | undefined;
  readonly shutdownGraceMs: number;
  readonly log: GrpcLogger;

  private constructor(
    readonly options: GrpcServerOptions,
    hub: StreamHub,
    own: { engine: boolean; hub: boolean },
  ) {
    this.hub = hub;
    this.engine = hub.engine;
    this.ownEngine = own.engine;
    this.ownHub = own.hub;
    this.log = hub.log;
    this.shutdownGraceMs = options.shutdownGraceMs ?? 5000;
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': 4 * 1024 * 1024,
      // Connections without a call are closed (GOAWAY) after this; silent ones earlier, by the gate.
      'grpc.max_connection_idle_ms': options.idleConnectionMs ?? 300_000,
    });
    this.server.addService(serviceDefinition(), {
      Analyze: (call: AnalyzeStream) => this.analyze(call),
      ListModels: (call: grpc.ServerUnaryCall<unknown, ListModelsResponseMsg>, cb: grpc.sendUnaryData<ListModelsResponseMsg>) =>
        this.listModels(call, cb),
    });
    this.health = new HealthImplementation({ '': 'NOT_SERVING', [SERVICE_NAME]: 'NOT_SERVING' });
    this.health.addToServer(this.server);
    new ReflectionService(reflectionPackageDefinition()).addToServer(this.server); // lists the health service too
  }

  /** Builds the server (not listening yet) on the given hub, or on a hub of its own (loading the models into a dedicated engine unless one is given). */
  static async create(options: GrpcServerOptions): Promise<AnalysisGrpcServer> {
    if (options.hub) return new AnalysisGrpcServer(options, options.hub, { engine: false, hub: false });
    let engine = options.engine;
    if (!engine) {
      engine = await createStreamEngine(options);
    }
    try {
      return new AnalysisGrpcServer(options, new StreamHub(engine, options, options.log), { engine: !options.engine, hub: true });
    } catch (e) {
      if (!options.engine) await engine.close();
      throw e;
    }
  }

  /** The stream limits in force (the hub's). */
  get limits(): StreamLimits {
    return this.hub.limits;
  }

  /**
   * Listens on `host:port` (port 0: a free one) through the connection gate (caps, handshake
   * timeout), which hands admitted sockets to grpc-js; resolves with the port.
   */
  async listen(host = '127.0.0.1', port = 50051): Promise<number> {
    const injector = this.server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    this.widenConnectionWindows(this.options.connectionWindowBytes ?? DEFAULT_CONNECTION_WINDOW_BYTES);
    const limits = { ...DEFAULT_CONNECTION_LIMITS, ...this.options.connections };
    this.gate = new GrpcConnectionGate(limits, (socket) => injector.injectConnection(socket), this.log);
    this._port = await this.gate.listen(host.replace(/^\[(.*)\]$/, '$1'), port);
    this.health.setStatus('', 'SERVING');
    this.health.setStatus(SERVICE_NAME, 'SERVING');
    return this._port;
  }

  /**
   * Raises each new HTTP/2 connection's receive window (RFC 9113 6.9.2) from the protocol's 64 KiB to `bytes`.
   * At 64 KiB, the window the streams of one connection share, 40 live streams (1.3 MB/s of audio) fill it in
   * 50 ms: any longer pause of this event loop stopped every client's sending until the window update reached
   * it, and 300 streams' p99 rose from ~0.3 s to 1.1-2.5 s (docs/streaming.md "Flow control"). Each stream's
   * own window stays at 64 KiB, so what a paused stream may hold unread is unchanged. grpc-js has no server
   * option for it: its injector's HTTP/2 server is reached through a private field, with a warning if it moved.
   */
  private widenConnectionWindows(requested: number): void {
    const bytes = Math.min(requested, 2 ** 31 - 1); // HTTP/2's largest window
    if (bytes <= 65_535) return;
    const servers = (this.server as unknown as { http2Servers?: Map<http2.Http2Server, unknown> }).http2Servers;
    const injected = servers instanceof Map ? [...servers.keys()].at(-1) : undefined;
    if (!injected) {
      this.log.warn({ event: 'grpc_window_unchanged' }, 'grpc-js HTTP/2 server not reachable: connection flow-control windows stay at 64 KiB');
      return;
    }
    injected.on('session', (session: http2.ServerHttp2Session) => {
      try {
        session.setLocalWindowSize(bytes);
      } catch {
        // the session closed before its settings were exchanged
      }
    });
  }

  /** Open, refused and silently closed connections of the gRPC port. */
  connectionStats(): ConnectionStats {
    return this.gate?.stats() ?? { open: 0, refused: 0, silentClosed: 0 };
  }

  get port(): number {
    return this._port;
  }

  stats(): GrpcServerStats {
    return this.hub.snapshot();
  }

  /**
   * Graceful shutdown: health goes NOT_SERVING, new calls are refused, every open gRPC stream
   * stops reading, sends the results of the audio it already has, and ends with UNAVAILABLE;
   * after graceMs the server is forced down. Closes the hub and engine if it made them.
   */
  close(graceMs = this.shutdownGraceMs): Promise<void> {
    this.closing ??= (async () => {
      this.health.setStatus('', 'NOT_SERVING');
      this.health.setStatus(SERVICE_NAME, 'NOT_SERVING');
      const deadline = Date.now() + graceMs;
      this.gate?.close(); // no new connections
      await this.hub.shutdown(Math.min(1000, graceMs), 'grpc');
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
      this.hub.abandon('grpc');
      if (this.ownHub) this.hub.close();
      if (this.ownEngine) await this.engine.close();
    })();
    return this.closing;
  }

  get isClosing(): boolean {
    return this.closing !== undefined;
  }

  /**
   * The owner of the call's x-api-key, or an error status. A failure counts against the peer
   * address; beyond its limit it is RESOURCE_EXHAUSTED (TOO_MANY_AUTH_FAILURES). A valid key always passes.
   */
  private authenticate(metadata: grpc.Metadata, peer: string): { owner: Owner } | { error: Partial<grpc.StatusObject> } {
    const values = metadata.get('x-api-key');
    const owner = values.length > 0 ? this.options.keys.lookup(String(values[0])) : undefined;
    if (owner) return { owner };
    const address = peerAddress(peer);
    const { retryAfter, reachedLimit } = this.options.authThrottle?.failure(address) ?? { retryAfter: 0, reachedLimit: false };
    if (reachedLimit) this.log.warn({ client: address, transport: 'grpc' }, 'too many failed authentications: address throttled');
    if (retryAfter > 0) return { error: statusError('TOO_MANY_AUTH_FAILURES', `too many failed authentications from this address; retry in ${retryAfter} s`) };
    return values.length === 0
      ? { error: statusError('MISSING_API_KEY', 'the x-api-key metadata entry is required') }
      : { error: statusError('INVALID_API_KEY', 'the x-api-key is not valid') };
  }

  private listModels(call: grpc.ServerUnaryCall<unknown, ListModelsResponseMsg>, cb: grpc.sendUnaryData<ListModelsResponseMsg>): void {
    const auth = this.authenticate(call.metadata, call.getPeer());
    if ('error' in auth) return cb(auth.error as grpc.ServiceError);
    cb(null, listModelsResponse(this.engine));
  }

  private analyze(call: AnalyzeStream): void {
    const auth = this.authenticate(call.metadata, call.getPeer());
    if ('error' in auth) {
      call.emit('error', auth.error);
      return;
    }
    if (this.closing) {
      call.emit('error', statusError('UNAVAILABLE', 'the server is shutting down'));
      return;
    }
    const sink = new GrpcSink(call);
    const stream = this.hub.open(auth.owner, sink, 'grpc');
    if (!('configure' in stream)) {
      sink.fail(stream);
      return;
    }
    bindCall(call, stream, this.engine, this.limits.maxOutputPeriodMs);
  }
}

/** The gRPC side of a LiveStream: messages to and from the call. */
class GrpcSink implements StreamSink {
  constructor(private readonly call: AnalyzeStream) {}
  send(out: StreamOutput): boolean {
    return this.call.write(out.type === 'step' ? stepMessage(out.step, out.final) : summaryMessage(out.summary));
  }
  started(streamId: string): void {
    const md = new grpc.Metadata();
    md.set(STREAM_ID_KEY, streamId);
    this.call.sendMetadata(md);
  }
  pauseInput(): void {
    this.call.pause();
  }
  resumeInput(): void {
    this.call.resume();
  }
  end(): void {
    // grpc-js sends the status after the messages it holds.
    this.call.end();
  }
  fail(e: StreamError): void {
    this.call.emit('error', statusError(e.code, e.message));
  }
}

/** Feeds the call's messages to the stream: config first, then audio, then the half-close. */
function bindCall(call: AnalyzeStream, stream: LiveStream, engine: InferenceEngine, maxOutputPeriodMs: number): void {
  call.on('data', (req: AnalyzeRequestMsg) => {
    if (stream.isDone) return;
    if (stream.awaitingConfig) {
      if (!req.config) return stream.fail(new AurisError('INVALID_ARGUMENT', 'the first message must carry config (StreamConfig); audio may only follow it'));
      try {
        const cfg = validateStreamConfig(req.config, engine.models(), maxOutputPeriodMs);
        stream.configure(cfg, cfg.streamId || `s-${randomUUID()}`);
      } catch (e) {
        stream.fail(e);
      }
      return;
    }
    if (req.config) return stream.fail(new AurisError('INVALID_ARGUMENT', 'config may only be sent once, in the first message'));
    if (req.audio) stream.audio(req.audio);
  });
  // A client's cancel (RST_STREAM) reaches grpc-js as a half-close first and 'cancelled' a tick
  // later; waiting one turn of the event loop keeps a cancelled stream from being flushed and
  // counted as a normal end.
  call.on('end', () => setImmediate(() => (call.cancelled ? stream.cancel('cancelled') : stream.endInput())));
  call.on('cancelled', () => stream.cancel('cancelled'));
  call.on('drain', () => stream.drained());
}
