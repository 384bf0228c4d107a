/**
 * The live-stream inference engine, built the same way by the app (src/app.ts) and by a stand-alone gRPC server
 * (src/grpc/server.ts): every model preloaded, big batches, calls handed over at once (several graphs' batches in
 * one message), encoder lanes
 * (src/inference/env.ts streamWorkers).
 */
import { InferenceEngine } from '../inference/engine';
import { streamWorkers } from '../inference/env';
import { STREAM_BEHIND_WAIT_MS, STREAM_BUNDLE, STREAM_DEPTH, STREAM_DISPATCH_INTERVAL_MS } from './hub';

export interface StreamEngineOptions {
  /** Models directory (default $AURIS_MODELS_DIR or <package>/models). */
  modelsDir?: string;
  /** Worker threads that never run a pretrained encoder (default: streamWorkers). */
  inferenceThreads?: number;
  /** Workers that run the pretrained encoders first (default: streamWorkers). */
  encoderLanes?: number;
  /** Most windows batched into one model call (default 64). */
  maxBatch?: number;
  /** Least time between two hand-overs of model calls to the workers, ms (default STREAM_DISPATCH_INTERVAL_MS). */
  dispatchIntervalMs?: number;
  /** Most batches of network calls handed to a worker in one message (default STREAM_BUNDLE). */
  bundle?: number;
  /** Hand-overs a worker may hold at once (default STREAM_DEPTH). */
  depth?: number;
  /** The queue wait over which the pool is behind and speech's provisional head calls every other step, ms (default STREAM_BEHIND_WAIT_MS; Infinity: never). */
  behindWaitMs?: number;
}

export function createStreamEngine(options: StreamEngineOptions = {}): Promise<InferenceEngine> {
  return InferenceEngine.create({
    ...(options.modelsDir !== undefined ? { modelsDir: options.modelsDir } : {}),
    preload: 'all',
    maxBatch: options.maxBatch ?? 64,
    dispatchIntervalMs: options.dispatchIntervalMs ?? STREAM_DISPATCH_INTERVAL_MS,
    bundle: options.bundle ?? STREAM_BUNDLE,
    depth: options.depth ?? STREAM_DEPTH,
    behindWaitMs: options.behindWaitMs ?? STREAM_BEHIND_WAIT_MS,
    ...streamWorkers(options.inferenceThreads, options.encoderLanes),
  });
}
