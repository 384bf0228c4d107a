/** Messages between InferencePool (main thread) and its workers (worker.ts). */

export interface ModelRef {
  name: string;
  modelPath: string;
  inputName: string;
  outputName: string;
  /** Stateful streaming graphs only: the state's input and output names. */
  stateInputName?: string;
  stateOutputName?: string;
  /** Pretrained encoders: each item is this many 16 kHz samples (input [batch, pcmFloats], output [batch, D]). */
  pcmFloats?: number;
}

/** What every inference worker is started with (its workerData). */
export interface WorkerSettings {
  /** onnxruntime threads of each pretrained encoder's session (session-options.ts). */
  encoderThreads: number;
}

export type ToWorker =
  | { type: 'load'; id: number; models: ModelRef[] }
  /** Dispose of these models' sessions (opened again on their next use). */
  | { type: 'release'; id: number; models: ModelRef[] }
  /** Dispose of every session and end the thread (its last message). */
  | { type: 'close'; id: number }
  | {
      type: 'run';
      id: number;
      model: ModelRef;
      /** Windows in the batch. */
      batch: number;
      /** 64 ms steps per window. */
      steps: number;
      /** [batch][steps*4][64] float32, transferred. */
      features: Float32Array;
      /** Stateful graphs: [batch][stateSize] float32, transferred. */
      state?: Float32Array;
      /**
       * Stateful graphs, instead of `state`: one shared buffer of stateSize floats per window (the
       * stream's own state). The worker reads them and writes the new states back in place, so
       * states neither travel nor become garbage on the main thread at every step.
       */
      sharedStates?: SharedArrayBuffer[];
    }
  /** Several `run` messages in one (each answered by its own result): one hand-over, one wake-up of the worker. */
  | { type: 'runs'; id: number; runs: Array<Extract<ToWorker, { type: 'run' }>> };

export type FromWorker =
  | { type: 'loaded'; id: number }
  | { type: 'released'; id: number }
  | { type: 'result'; id: number; probs: Float32Array; dims: number[]; ms: number; state?: Float32Array }
  | { type: 'error'; id: number; message: string; code: string; file?: string };

/** A zero state of `floats` floats in its own shared buffer (a live stream's state, updated in place by the workers). */
export function sharedState(floats: number): Float32Array {
  return new Float32Array(new SharedArrayBuffer(floats * Float32Array.BYTES_PER_ELEMENT));
}

/** True when the array is exactly one whole shared buffer of `floats` floats (see sharedState). */
export function isSharedState(a: Float32Array, floats: number): boolean {
  return a.buffer instanceof SharedArrayBuffer && a.byteOffset === 0 && a.length === floats && a.buffer.byteLength === a.byteLength;
}

/** True when the array spans its whole (non-shared) buffer, so the buffer can be transferred instead of copied. */
export function ownsWholeBuffer(a: Float32Array): boolean {
  return a.byteOffset === 0 && a.byteLength === a.buffer.byteLength && a.buffer instanceof ArrayBuffer;
}
