/** Messages between InferencePool (main thread) and its workers (worker.ts). */

export interface ModelRef {
  name: string;
  modelPath: string;
  inputName: string;
  outputName: string;
  /** Stateful streaming graphs only: the state's input and output names. */
  stateInputName?: string;
  stateOutputName?: string;
}

export type ToWorker =
  | { type: 'load'; id: number; models: ModelRef[] }
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
    };

export type FromWorker =
  | { type: 'loaded'; id: number }
  | { type: 'result'; id: number; probs: Float32Array; dims: number[]; ms: number; state?: Float32Array }
  | { type: 'error'; id: number; message: string; code: string; file?: string };

/** True when the array spans its whole (non-shared) buffer, so the buffer can be transferred instead of copied. */
export function ownsWholeBuffer(a: Float32Array): boolean {
  return a.byteOffset === 0 && a.byteLength === a.buffer.byteLength && a.buffer instanceof ArrayBuffer;
}
