/**
 * Inference worker thread: owns its own onnxruntime sessions (one per model, created on
 * first use or on 'load') and runs them synchronously here, off the main event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import { nativeStateCopy, type StateCopy } from '../audio';
import { ownsWholeBuffer, type FromWorker, type ModelRef, type ToWorker, type WorkerSettings } from './protocol';
import { FRAMES_PER_STEP, N_MELS } from './registry';
import { sessionOptionsFor } from './session-options';

const port = parentPort;
if (!port) throw new Error('inference worker must run in a worker thread');

/** Inputs at least this large go back to the main thread with the answer (see the run handler). */
const HAND_BACK_BYTES = 64 * 1024;

const settings = (workerData ?? { encoderThreads: 1 }) as WorkerSettings;

const sessions = new Map<string, Promise<ort.InferenceSession>>();
/** The runs under way (a message holds one batch, or a bundle run in turn; a released session is disposed of once they are over). */
const running = new Set<Promise<unknown>>();

const sessionKey = (model: ModelRef): string => `${model.name}\0${model.modelPath}`;
/** The model file of a sessionKey. */
const fileOfKey = (key: string): string => key.slice(key.indexOf('\0') + 1);

class LoadError extends Error {
  constructor(message: string, readonly file: string) {
    super(message);
  }
}

function session(model: ModelRef): Promise<ort.InferenceSession> {
  const key = sessionKey(model);
  let s = sessions.get(key);
  if (!s) {
    s = ort.InferenceSession.create(model.modelPath, sessionOptionsFor(model, settings.encoderThreads)).catch((e: Error) => {
      sessions.delete(key);
      throw new LoadError(`${model.modelPath}: cannot load model ${model.name} (${e.message})`, model.modelPath);
    });
    sessions.set(key, s);
  }
  return s;
}

/**
 * Forgets the sessions of the models' files, under whatever model name they were opened (the next run opens a new
 * one), then disposes of them once the runs under way are over.
 */
async function release(models: readonly ModelRef[]): Promise<void> {
  const files = new Set(models.map((m) => m.modelPath));
  const keys = [...sessions.keys()].filter((key) => files.has(fileOfKey(key)));
  const gone = keys.map((key) => {
    const s = sessions.get(key)!;
    sessions.delete(key);
    return s;
  });
  await Promise.allSettled([...running]);
  for (const s of gone) await s.then((x) => x.release()).catch(() => undefined);
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

/**
 * Ends this thread from inside, at a safe point: the sessions disposed, then the port closed so
 * the thread runs out of work. A thread stopped from outside (Worker.terminate) while
 * onnxruntime's native code holds live sessions can abort the whole process.
 */
async function shutdown(): Promise<void> {
  const all = await Promise.allSettled([...sessions.values()]);
  sessions.clear();
  for (const r of all) if (r.status === 'fulfilled') await r.value.release().catch(() => undefined);
  port!.close();
}

port.on('message', (msg: ToWorker) => {
  if (msg.type === 'close') {
    void shutdown();
    return;
  }
  if (msg.type === 'release') {
    void release(msg.models).then(() => reply({ type: 'released', id: msg.id }));
    return;
  }
  if (msg.type === 'load') {
    Promise.all(msg.models.map(session)).then(
      () => reply({ type: 'loaded', id: msg.id }),
      (e) => errorReply(msg.id, e),
    );
    return;
  }
  if (msg.type === 'runs') {
    // several batches in one message (the pool's hand-over to a busy stream engine): run one after the other
    const all = msg.runs.reduce<Promise<void>>((prev, r) => prev.then(() => runBatch(r)), Promise.resolve());
    running.add(all);
    void all.finally(() => running.delete(all));
    return;
  }
  const run = runBatch(msg);
  running.add(run);
  void run.finally(() => running.delete(run));
});

type RunMessage = Extract<ToWorker, { type: 'run' }>;

/** Runs one batch and replies with its result (or its error); never rejects. */
function runBatch(msg: RunMessage): Promise<void> {
  const { id, model, batch, steps, features, sharedStates } = msg;
  return session(model)
    .then(async (s) => {
      const t0 = performance.now();
      const state = sharedStates ? gather(sharedStates) : msg.state;
      const inputDims = model.pcmFloats ? [batch, model.pcmFloats] : [batch, steps * FRAMES_PER_STEP, N_MELS];
      const feeds: Record<string, ort.Tensor> = {
        [model.inputName]: new ort.Tensor('float32', features, inputDims),
      };
      const fetches = [model.outputName];
      if (state) {
        if (!model.stateInputName || !model.stateOutputName) throw new Error(`model ${model.name} has no state input`);
        feeds[model.stateInputName] = new ort.Tensor('float32', state, [batch, state.length / batch]);
        fetches.push(model.stateOutputName);
      }
      const outs = await s.run(feeds, fetches);
      const out = outs[model.outputName];
      if (!out) throw new Error(`model ${model.name} produced no output "${model.outputName}"`);
      const dims = out.dims.map(Number);
      if (model.pcmFloats ? dims.length !== 2 || dims[0] !== batch : dims.length !== 3 || dims[0] !== batch || dims[1] !== steps) {
        throw new Error(`model ${model.name}: output shape [${dims.join(', ')}], expected [${batch}, ${model.pcmFloats ? 'D' : `${steps}, C`}]`);
      }
      const probs = owned(out.data as Float32Array);
      const transfer = [probs.buffer as ArrayBuffer];
      let newState: Float32Array | undefined;
      if (state) {
        const st = outs[model.stateOutputName!];
        if (!st || st.data.length !== state.length) throw new Error(`model ${model.name}: state output of ${st?.data.length ?? 0} floats, expected ${state.length}`);
        if (sharedStates) {
          scatter(st.data as Float32Array, sharedStates);
        } else {
          newState = owned(st.data as Float32Array);
          transfer.push(newState.buffer as ArrayBuffer);
        }
      }
      // A large input goes back with the answer, to be freed by the main thread's next scavenge. Here it
      // would wait for this isolate's own collector, which allocates too little to run often: dead
      // inputs (CAM++'s windows, 100 KB each) piled up to tens of MB per worker (docs/benchmarks.md, Memory).
      // Live streams' per-step inputs (a few KB) stay: handed back, they made the main thread's
      // collector run major GCs two to three times as often at 100 streams.
      if (features.byteLength >= HAND_BACK_BYTES && ownsWholeBuffer(features)) transfer.push(features.buffer as ArrayBuffer);
      reply({ type: 'result', id, probs, dims, ms: performance.now() - t0, ...(newState ? { state: newState } : {}) }, transfer);
    })
    .catch((e) => errorReply(id, e));
}

/** The addon's memcpy of shared states (a typed array's set() copies a shared buffer element by element: 3-4x slower). */
let stateCopy: StateCopy | undefined;
const states = (): StateCopy => (stateCopy ??= nativeStateCopy());

/** The streams' states side by side ([batch][stateSize]), the graph's state input. */
function gather(shared: SharedArrayBuffer[]): Float32Array {
  const bytes = shared.reduce((n, sab) => n + sab.byteLength, 0);
  // not zero-filled: every float is written below
  const out = new Float32Array(Buffer.allocUnsafeSlow(bytes).buffer, 0, bytes / Float32Array.BYTES_PER_ELEMENT);
  states().gather(shared.map((sab) => new Float32Array(sab)), out);
  return out;
}

/** Writes each stream's new state back into its own shared buffer. */
function scatter(next: Float32Array, shared: SharedArrayBuffer[]): void {
  states().scatter(next, shared.map((sab) => new Float32Array(sab)));
}

/** The array itself when it owns its whole buffer (so it can be transferred), else a copy. */
function owned(data: Float32Array): Float32Array {
  return ownsWholeBuffer(data) ? data : data.slice();
}
