/**
 * onnxruntime session options of the inference workers: one thread per session (the pool
 * gives each worker thread its own sessions and runs them in parallel), graph optimisation 'all';
 * pretrained encoders may be given more threads (AURIS_ENCODER_THREADS).
 */
import type * as ort from 'onnxruntime-node';
import type { ModelRef } from './protocol';

const NETWORK_SESSION_OPTIONS: ort.InferenceSession.SessionOptions = {
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
};

/**
 * Pretrained encoders run without onnxruntime's memory pattern: the pattern keeps one block
 * sized for the largest batch seen, and with CAM++ (about 8 MB of activations a window) that
 * block stayed resident in every worker between calls. Without it the activations come from
 * the arena as they are needed: a 1-hour speaker-map file peaks 15-22 MiB lower with two
 * workers, at the same speed (docs/benchmarks.md, Memory of a long file job).
 */
const ENCODER_SESSION_OPTIONS: ort.InferenceSession.SessionOptions = { ...NETWORK_SESSION_OPTIONS, enableMemPattern: false };

/**
 * The options a worker opens `model` with (an encoder: it has `pcmFloats`; `name` only makes any model
 * reference fit). An encoder given `encoderThreads` > 1 runs each call on that many threads, which sleep
 * between operators instead of spinning: spinning cost 10 % more CPU for the same wall-clock time on the
 * 1-hour speaker-map file (docs/benchmarks.md, session 37), CPU that live streams' workers need.
 */
export function sessionOptionsFor(model: Pick<ModelRef, 'name' | 'pcmFloats'>, encoderThreads = 1): ort.InferenceSession.SessionOptions {
  if (model.pcmFloats === undefined) return NETWORK_SESSION_OPTIONS;
  if (encoderThreads <= 1) return ENCODER_SESSION_OPTIONS;
  return { ...ENCODER_SESSION_OPTIONS, intraOpNumThreads: encoderThreads, extra: { session: { intra_op: { allow_spinning: '0' } } } };
}
