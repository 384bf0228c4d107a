/**
 * The composition root of `auris serve`: builds each part of the service once and mounts the
 * transports side by side, with one start and one shutdown order.
 *
 *   config, API keys, job backends, downloads, callbacks, job workers -> createServer (src/http)
 *   live streams: stream engine, StreamHub (quotas, idle timeouts),
 *                 stream tokens (this process; shared over NATS KV in   -> here
 *                 distributed mode, so any API node redeems them)
 *   transports: REST + WebSocket GET /stream + POST /stream-tokens on the REST port,
 *               gRPC on GRPC_PORT, both over the one StreamHub         -> mounted here
 *
 * Two inference engines per process, on purpose: file jobs run 65 s windows (1024 steps per
 * call) and streams run 64 ms ones; in one FIFO worker queue a long file job's windows would
 * sit in front of every stream's next step. The stream engine loads every model at start.
 *
 * Shutdown: the live streams first (each sends what its audio already gives and ends with
 * UNAVAILABLE), then gRPC, then REST (no new jobs; running jobs resume on the next start),
 * then the stream engine.
 */
import fastifyWebsocket from '@fastify/websocket';
import { AnalysisGrpcServer } from './grpc/server';
import { streamTokenRoutes } from './http/routes/stream-tokens';
import { createServer, type AurisServer, type ServerOptions } from './http/server';
import type { InferenceEngine } from './inference/engine';
import { createStreamEngine } from './streaming/engine';
import { StreamHub, type StreamLimits } from './streaming/hub';
import { StreamTokens, type StreamTokenStore } from './streaming/tokens';
import { SharedStreamTokens } from './jobs/nats/stream-tokens';
import type { NatsBackends } from './jobs/nats';
import { websocketErrorHandler } from './websocket/socket-errors';
import { websocketStreamRoutes } from './websocket/stream-route';

export interface StreamingOptions extends Partial<StreamLimits> {
  /** Serve gRPC on config.grpcPort (default true). */
  grpc?: boolean;
  /**
   * Worker threads of the stream engine that never run a pretrained encoder (default: $AURIS_INFERENCE_THREADS, else
   * one per core less the encoder lanes).
   */
  inferenceThreads?: number;
  /** Workers of the stream engine that run the pretrained encoders first (default: $AURIS_STREAM_ENCODER_LANES, else a quarter of the cores, at least 1). */
  encoderLanes?: number;
  /** Most windows batched into one model call (default 64). */
  maxBatch?: number;
  /** Least time between two hand-overs of model calls to the workers, ms: calls made meanwhile are batched (default 0: at once; docs/streaming.md). */
  dispatchIntervalMs?: number;
  /** Most batches of network calls handed to a worker in one message (default 4; 1: one batch per message as before session 49). */
  bundle?: number;
  /** Hand-overs a stream engine's worker may hold at once (default 2; 1: a worker waits for the main thread between calls, as before session 50). */
  depth?: number;
  /** Queue wait over which the stream engine is behind and speech's provisional head calls every other step, ms (default 8; Infinity: never, as before session 51). */
  behindWaitMs?: number;
  /** On close(): how long open streams may take to end, ms (default 5000). */
  shutdownGraceMs?: number;
}

export interface AppOptions extends ServerOptions {
  /** Live streaming options (limits default to config.streaming), or false for a node without streaming (the worker role). */
  streaming?: false | StreamingOptions;
}

export interface AurisApp {
  rest: AurisServer;
  /** The live-stream hub shared by the transports (null without streaming). */
  hub: StreamHub | null;
  tokens: StreamTokenStore | null;
  /** The gRPC streaming server (null without it). */
  grpc: AnalysisGrpcServer | null;
  /** http://host:port of the REST (and WebSocket) listener. */
  url: string;
  /** The gRPC port (0 without gRPC). */
  grpcPort: number;
  close(): Promise<void>;
}

/** Builds the service and starts listening (REST + WebSocket, then gRPC); a failure closes what was started. */
export async function startApp(opts: AppOptions = {}): Promise<AurisApp> {
  const rest = await createServer(opts);
  const { config, app } = rest;
  const streaming = opts.streaming === false ? null : opts.streaming ?? {};
  let engine: InferenceEngine | null = null;
  let hub: StreamHub | null = null;
  let tokens: StreamTokenStore | null = null;
  let grpc: AnalysisGrpcServer | null = null;
  const graceMs = streaming?.shutdownGraceMs ?? 5000;
  const closeAll = async (): Promise<void> => {
    await hub?.shutdown(Math.min(1000, graceMs));
    await grpc?.close(graceMs);
    await rest.close();
    hub?.close();
    await engine?.close();
  };
  try {
    if (streaming) {
      engine = await createStreamEngine({ ...streaming, modelsDir: config.modelsDir });
      const log = app.log.child({ component: 'streaming' });
      hub = new StreamHub(engine, { ...config.streaming, maxOutputPeriodMs: config.limits.maxOutputPeriodMs, ...streaming }, log);
      const nats = natsBackends(rest.backends);
      tokens = nats
        ? await SharedStreamTokens.open(nats.conn, nats.settings, config.streaming.tokenTtlSec, app.log.child({ component: 'nats' }))
        : new StreamTokens(config.streaming.tokenTtlSec);
      await app.register(fastifyWebsocket, {
        options: { maxPayload: 4 * 1024 * 1024 },
        // A client that drops its connection is not a server error; a protocol error keeps its close code (1009 ...).
        errorHandler: websocketErrorHandler(log),
      });
      await app.register(websocketStreamRoutes, { hub, keys: rest.keys, tokens, authThrottle: rest.authThrottle });
      await app.register(streamTokenRoutes, { tokens });
      if (streaming.grpc !== false) {
        grpc = await AnalysisGrpcServer.create({
          keys: rest.keys,
          hub,
          shutdownGraceMs: graceMs,
          authThrottle: rest.authThrottle,
          connections: config.grpc,
          idleConnectionMs: config.grpc.idleTimeoutMs,
          connectionWindowBytes: config.grpc.connectionWindowBytes,
        });
      }
    }
    await rest.listen();
    if (grpc) {
      const port = await grpc.listen(config.host, config.grpcPort);
      app.log.info({ host: config.host, port, service: 'audioanalysis.v1.AudioAnalysis' }, 'auris gRPC streaming serving');
    }
  } catch (e) {
    // e.g. a port is taken: `auris serve` fails as a whole rather than half-started.
    await closeAll();
    throw e;
  }
  let closing: Promise<void> | undefined;
  return {
    rest,
    hub,
    tokens,
    grpc,
    url: rest.url,
    grpcPort: grpc?.port ?? 0,
    close: () => (closing ??= closeAll()),
  };
}

/** The NATS backends of distributed mode (src/jobs/nats), or null on the embedded default. */
function natsBackends(b: unknown): NatsBackends | null {
  const n = b as Partial<NatsBackends> | null;
  return n && typeof n === 'object' && n.conn && n.settings ? (n as NatsBackends) : null;
}
