/**
 * Inference worker thread: owns its own onnxruntime sessions (one per model, created on
 * first use or on 'load') and runs them synchronously here, off the main event loop.
 */
import { parentPort } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import type { FromWorker, ModelRef, ToWorker } from './protocol';
import { FRAMES_PER_STEP, N_MELS } from './registry';

const port = parentPort;
if (!port) throw new Error('inference worker must run in a worker thread');

const sessions = new Map<string, Promise<ort.InferenceSession>>();

const SESSION_OPTIONS: ort.InferenceSession.SessionOptions = {
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
};

class LoadError extends Error {
  constructor(message: string, readonly file: string) {
    super(message);
  }
}

function session(model: ModelRef): Promise<ort.InferenceSession> {
  const key = `${model.name}\0${model.modelPath}`;
  let s = sessions.get(key);
  if (!s) {
    s = ort.InferenceSession.create(model.modelPath, SESSION_OPTIONS).catch((e: Error) => {
      sessions.delete(key);
      throw new LoadError(`${model.modelPath}: cannot load model ${model.name} (${e.message})`, model.modelPath);
    });
    sessions.set(key, s);
  }
  return s;
}

function reply(msg: FromWorker, transfer?: ArrayBuffer[]): void {
  port!.postMessage(msg, transfer);
}

function errorReply(id: number, e: unknown): void {
  if (e instanceof LoadError) {
    reply({ type: 'error', id, message: e.message, code: 'MODEL_LOAD_FAILED', file: e.file });
  } else {
    reply({ type: 'error', id, message: (e as Error)?.message ?? String(e), code: 'INFERENCE_FAILED' });
  }
}

port.on('message', (msg: ToWorker) => {
  if (msg.type === 'load') {
    Promise.all(msg.models.map(session)).then(
      () => reply({ type: 'loaded', id: msg.id }),
      (e) => errorReply(msg.id, e),
    );
    return;
  }
  const { id, model, batch, steps, features } = msg;
  session(model)
    .then(async (s) => {
      const t0 = performance.now();
      const input = new ort.Tensor('float32', features, [batch, steps * FRAMES_PER_STEP, N_MELS]);
      const out = (await s.run({ [model.inputName]: input }, [model.outputName]))[model.outputName];
      if (!out) throw new Error(`model ${model.name} produced no output "${model.outputName}"`);
      const dims = out.dims.map(Number);
      if (dims.length !== 3 || dims[0] !== batch || dims[1] !== steps) {
        throw new Error(`model ${model.name}: output shape [${dims.join(', ')}], expected [${batch}, ${steps}, C]`);
      }
      let data = out.data as Float32Array;
      // Transfer the output buffer when we own all of it; otherwise copy once.
      if (data.byteOffset !== 0 || data.byteLength !== data.buffer.byteLength || !(data.buffer instanceof ArrayBuffer)) {
        data = data.slice();
      }
      reply({ type: 'result', id, probs: data, dims, ms: performance.now() - t0 }, [data.buffer as ArrayBuffer]);
    })
    .catch((e) => errorReply(id, e));
});
