/**
 * The composition root of `auris serve`: builds each part of the service once and mounts the
 * transports side by side, with one start and one shutdown order.
 *
 *   config, API keys, job backends, downloads, callbacks, job workers -> createServer (src/http)
 *   live-stream engine (inference workers for streams)               -> here
 *   transports: REST (+ WebSocket /stream on the same port), gRPC     -> mounted here
 *
 * Two inference engines per process, on purpose: file jobs run 65 s windows (1024 steps per
 * call) and streams run 64 ms ones; in one FIFO worker queue a long file job's windows would
 * sit in front of every stream's next step. The stream engine loads every model at start.
 *
 * Shutdown: the streaming transports first (open streams send what their audio already gives
 * and end cleanly), then REST (no new jobs; running jobs resume on the next start), then the
 * stream engine.
 */
import { AnalysisGrpcServer, type GrpcServerOptions } from './grpc/server';
import { createServer, type AurisServer, type ServerOptions } from './http/server';
import { InferenceEngine } from './inference/engine';

export interface AppOptions extends ServerOptions {
  /**
   * Live streaming (gRPC on config.grpcPort): options of the gRPC server, or false for a node
   * without streaming (the worker role of a distributed deployment). Default: on.
   */
  streaming?: false | Partial<Omit<GrpcServerOptions, 'keys' | 'engine'>>;
}

export interface AurisApp {
  rest: AurisServer;
  /** The gRPC streaming server (null without streaming). */
  grpc: AnalysisGrpcServer | null;
  /** The live-stream inference engine (null without streaming). */
  streamEngine: InferenceEngine | null;
  /** http://host:port of the REST (and WebSocket) listener. */
  url: string;
  /** The gRPC port (0 without streaming). */
  grpcPort: number;
  close(): Promise<void>;
}

/** Builds the service and starts listening (REST, then gRPC); a failure closes what was started. */
export async function startApp(opts: AppOptions = {}): Promise<AurisApp> {
  const rest = await createServer(opts);
  const streaming = opts.streaming === false ? null : opts.streaming ?? {};
  let streamEngine: InferenceEngine | null = null;
  let grpc: AnalysisGrpcServer | null = null;
  const closeAll = async (): Promise<void> => {
    await grpc?.close();
    await rest.close();
    await streamEngine?.close();
  };
  try {
    if (streaming) {
      streamEngine = await InferenceEngine.create({
        modelsDir: streaming.modelsDir ?? rest.config.modelsDir,
        preload: 'all',
        maxBatch: streaming.maxBatch ?? 64,
        ...(streaming.inferenceThreads !== undefined ? { size: streaming.inferenceThreads } : {}),
      });
      grpc = await AnalysisGrpcServer.create({ log: rest.app.log.child({ component: 'grpc' }), ...streaming, keys: rest.keys, engine: streamEngine });
    }
    await rest.listen();
    if (grpc) {
      const port = await grpc.listen(rest.config.host, rest.config.grpcPort);
      rest.app.log.info({ host: rest.config.host, port, service: 'audioanalysis.v1.AudioAnalysis' }, 'auris gRPC streaming serving');
    }
  } catch (e) {
    // e.g. a port is taken: `auris serve` fails as a whole rather than half-started.
    await closeAll();
    throw e;
  }
  let closing: Promise<void> | undefined;
  return {
    rest,
    grpc,
    streamEngine,
    url: rest.url,
    grpcPort: grpc?.port ?? 0,
    close: () => (closing ??= closeAll()),
  };
}
