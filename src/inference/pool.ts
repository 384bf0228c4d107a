/**
 * A small pool of inference worker threads (onnxruntime runs synchronously on the calling
 * thread, so it must not run on the main event loop). Each worker owns its own sessions
 * (intraOpNumThreads 1, graph optimisation 'all'). Window inputs are transferred, not copied,
 * when they own their whole buffer; outputs come back transferred. A live stream's state lives
 * in its own SharedArrayBuffer (protocol.sharedState), which the worker reads and overwrites in
 * place: at a few hundred streams, states travelling both ways at every 64 ms step were most
 * of the main thread's allocations and its major garbage collections (docs/streaming.md).
 *
 * Jobs wait in a main-thread queue until a worker is free; jobs for the same model and
 * window length are then batched into one [B, T, 64] call (e.g. the channels of a stereo
 * file, or windows that queued up while the workers were busy). With `bundle`, a free worker is handed the
 * batches of several such graphs in one message (the stream engine: fewer wake-ups of a busy machine).
 */
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { AurisError } from '../errors';
import { defaultEncoderThreads, defaultInferenceThreads } from './env';
import { isSharedState, ownsWholeBuffer, type FromWorker, type ModelRef, type ToWorker, type WorkerSettings } from './protocol';
import { FLOATS_PER_STEP, ModelInfo } from './registry';

export interface InferencePoolOptions {
  /** Worker threads (default: $AURIS_INFERENCE_THREADS or os.availableParallelism()). */
  size?: number;
  /** onnxruntime threads of each pretrained encoder's session in every worker (default: $AURIS_ENCODER_THREADS or 1). */
  encoderThreads?: number;
  /** Most windows in one worker call (default 8). */
  maxBatch?: number;
  /** Most steps (windows x steps) in one worker call, bounds the batch buffer (default 8192 = 8.4 MB of features). */
  maxBatchSteps?: number;
  /**
   * Least time between two dispatches, ms (default 0: at once). Jobs submitted sooner wait
   * for the next dispatch and share its batches: live streams' calls of one step each then
   * travel as a few large calls instead of many small ones (each call has a fixed cost on
   * both threads). A pool that has not dispatched for this long dispatches at once, so a
   * lone stream waits for nothing.
   */
  dispatchIntervalMs?: number;
  /**
   * Workers that run the pretrained encoders' jobs first (default 0: every worker runs everything in queue order).
   * The other `size` workers then never run an encoder, and the lanes run the networks' jobs only when no encoder
   * job waits. A live server's network calls take 1-4 ms and are due every 64 ms; an encoder call takes 10-40 ms,
   * and a worker shared by both made every stream's next step wait behind it (docs/streaming.md, Benchmark, "Encoder lanes").
   */
  encoderLanes?: number;
  /**
   * Most batches of network calls handed to a worker in one message (default 1). Under load a live server hands over
   * about a thousand batches a second, and each hand-over wakes a worker, which on a full machine costs the main thread
   * its core (docs/streaming.md, session 49); with more, a worker gets the distinct graphs waiting for it together
   * and runs them one after the other. Encoder windows always go alone.
   */
  bundle?: number;
  /**
   * Hand-overs a worker may hold at once (default 1: a worker gets its next batches once it has answered). With 2, a
   * busy worker is handed its next batches while it runs, and starts them as soon as it is done instead of waiting for
   * the main thread to take its answer and hand over again: on a full machine that turn is most of a call's round trip
   * (docs/streaming.md, session 50). Idle workers are served first, and a worker running an encoder's window gets
   * nothing more, so that no network call waits behind a 10-40 ms encoder call.
   */
  depth?: number;
  /**
   * The pool is `behind` while the jobs handed over lately waited longer than this in the queue, ms (default: never).
   * The stream engine's speech head then calls every other step (src/pipeline/provisional-results.ts).
   */
  behindWaitMs?: number;
}

/** Weight of each handed-over job in the pool's running mean of queue waits: about the last hundred jobs count. */
const WAIT_WEIGHT = 0.01;

export interface GraphStats {
  busyMs: number;
  calls: number;
  windows: number;
}

export interface PoolStats {
  /** Worker calls made. */
  calls: number;
  /** Messages that handed calls to a worker (< calls when batches of several graphs go together: `bundle`). */
  handOvers: number;
  /** Windows run (>= calls when batching). */
  windows: number;
  /** Model steps computed, context included. */
  steps: number;
  /** Time spent inside session.run, summed over workers, ms. */
  busyMs: number;
  /** Of these: pretrained-encoder windows embedded, and the workers' time on them. */
  encoderWindows: number;
  encoderBusyMs: number;
  /** Windows handed over while the pool was `behind` (behindWaitMs). */
  windowsBehind: number;
  /** Per graph (`<model>/<file>`, e.g. `gender/stream.onnx`): workers' time (ms), calls and windows: where inference goes. */
  byGraph: Record<string, GraphStats>;
}

/** What the pool needs to know about a model (a registry ModelInfo fits). */
export type PoolModel = Pick<ModelInfo, 'name' | 'modelPath' | 'inputName' | 'outputName' | 'rawKeys'>;

/** A pretrained encoder (src/inference/encoders.ts): one item = `pcmFloats` 16 kHz samples -> `dim` floats. */
export interface EncoderPoolModel extends PoolModel {
  pcmFloats: number;
  /**
   * Most items per call (the manifest's `max_batch`), below the pool's own cap: a convolutional
   * encoder's activations grow with the batch (CAM++: about 8 MB per window), and a 64-window call
   * would hold half a gigabyte. Undefined: the pool's cap alone.
   */
  maxBatch?: number;
  dim: number;
}

const isEncoder = (m: PoolModel): m is EncoderPoolModel => typeof (m as EncoderPoolModel).pcmFloats === 'number';
/** Floats of one job's input. */
const inputFloats = (m: PoolModel, steps: number): number => (isEncoder(m) ? m.pcmFloats : steps * FLOATS_PER_STEP);

/** A stateful streaming graph (registry StreamingGraph plus the model's name and classes). */
export interface StatefulPoolModel extends PoolModel {
  stateInputName: string;
  stateOutputName: string;
  stateSize: number;
}

/** Result of a stateful call: probabilities [steps][C] and the state to pass to the next call. */
export interface StatefulResult {
  probs: Float32Array;
  state: Float32Array;
}

interface Job {
  key: string;
  model: PoolModel | StatefulPoolModel;
  steps: number;
  features: Float32Array;
  /** Stateful graphs: this stream's state ([stateSize]). */
  state?: Float32Array;
  /** Dispatched before every other job (a live answer whose latency is its point: speech's provisional results). */
  urgent?: boolean;
  resolve: (out: StatefulResult) => void;
  reject: (e: Error) => void;
  /** performance.now() when it was queued. */
  queuedAt: number;
}

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;
type RunMessage = Extract<ToWorker, { type: 'run' }>;

/** A batch ready to hand over: its run message and buffers to transfer, and how its states travel (stateSize 0: none). */
interface PreparedBatch {
  msg: WithoutId<RunMessage>;
  transfer: ArrayBuffer[];
  stateSize: number;
  shared: boolean;
}

/** One message's batches to a worker, while some are unanswered: the model files of those, and whether it is an encoder's window. */
interface HandOver {
  readonly running: string[];
  readonly encoder: boolean;
}

interface Pending {
  resolve: (msg: FromWorker) => void;
  reject: (e: Error) => void;
}

class PoolWorker {
  readonly worker: Worker;
  /** With lanes: an encoder lane (true: encoders first, then anything) or a network worker (false: never an encoder); undefined: no lanes. */
  encoderLane: boolean | undefined;
  /** The messages handed to it with batches not answered yet (empty: idle). */
  readonly handOvers = new Set<HandOver>();
  dead = false;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  constructor(onDeath: (w: PoolWorker) => void, settings: WorkerSettings) {
    this.worker = new Worker(path.join(__dirname, 'worker.js'), { workerData: settings });
    this.worker.unref();
    this.worker.on('message', (msg: FromWorker) => {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (this.pending.size === 0) this.worker.unref();
      p.resolve(msg);
    });
    const die = (err: Error): void => {
      if (this.dead) return;
      this.dead = true;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      onDeath(this);
    };
    this.worker.on('error', (e) => die(new AurisError('INFERENCE_FAILED', `inference worker crashed: ${e.message}`, undefined, { cause: e })));
    this.worker.on('exit', (code) => die(new AurisError('INFERENCE_FAILED', `inference worker exited (code ${code})`)));
  }

  /**
   * Ends the thread: asks it to dispose of its sessions and stop (worker.ts shutdown), and only
   * when it has not ended within `ms` (stuck in a model call) stops it from outside.
   */
  async shutdown(ms: number): Promise<void> {
    if (this.dead) return;
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.ref();
    this.worker.postMessage({ type: 'close', id: this.nextId++ } as ToWorker);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), ms)));
    const tooLate = await Promise.race([exited.then(() => false), late]);
    clearTimeout(timer);
    if (tooLate) await this.worker.terminate();
  }

  /** Sends several runs in one message (one hand-over, one wake-up); each resolves with its own reply. */
  callMany(runs: Array<WithoutId<RunMessage>>, transfer: ArrayBuffer[]): Array<Promise<FromWorker>> {
    if (this.dead) return runs.map(() => Promise.reject(new AurisError('INFERENCE_FAILED', 'inference worker is gone')));
    const withIds = runs.map((r) => ({ ...r, id: this.nextId++ }));
    const replies = withIds.map((r) => new Promise<FromWorker>((resolve, reject) => this.pending.set(r.id, { resolve, reject })));
    this.worker.ref();
    this.worker.postMessage({ type: 'runs', id: this.nextId++, runs: withIds } as ToWorker, transfer);
    return replies;
  }

  /** Sends a message; resolves with the worker's reply. The worker keeps the process alive only while busy. */
  call(msg: WithoutId<ToWorker>, transfer: ArrayBuffer[] = []): Promise<FromWorker> {
    if (this.dead) return Promise.reject(new AurisError('INFERENCE_FAILED', 'inference worker is gone'));
    const id = this.nextId++;
    return new Promise<FromWorker>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.ref();
      this.worker.postMessage({ ...msg, id } as ToWorker, transfer);
    });
  }
}

let pinned = false;
/**
 * Loads onnxruntime-node once on the main thread and keeps it. Its native binding registers
 * itself only when first loaded into the process: if every worker that loaded it exits, Node
 * unloads it and a later worker fails with "Module did not self-register". Holding it here
 * keeps it loaded for the life of the process (no inference runs on this thread).
 */
function pinRuntime(): void {
  if (pinned) return;
  require('onnxruntime-node');
  pinned = true;
}

const ref = (m: PoolModel | StatefulPoolModel): ModelRef => ({
  name: m.name,
  modelPath: m.modelPath,
  inputName: m.inputName,
  outputName: m.outputName,
  ...('stateInputName' in m ? { stateInputName: m.stateInputName, stateOutputName: m.stateOutputName } : {}),
  ...(isEncoder(m) ? { pcmFloats: m.pcmFloats } : {}),
});

function replyError(msg: FromWorker): AurisError | undefined {
  if (msg.type !== 'error') return undefined;
  const code = msg.code === 'MODEL_LOAD_FAILED' ? 'MODEL_LOAD_FAILED' : 'INFERENCE_FAILED';
  return new AurisError(code, msg.message, msg.file ? { file: msg.file } : undefined);
}

/** The new state, written into the stream's shared buffer when it had one (a batch that mixed shared and travelling states). */
function keepShared(previous: Float32Array, next: Float32Array): Float32Array {
  if (!isSharedState(previous, next.length)) return next;
  previous.set(next);
  return previous;
}

/** One buffer holding the arrays in order (the first array itself when it is alone and owns its buffer: transferred as is). */
function stack(parts: Float32Array[], per: number): Float32Array {
  const first = parts[0]!;
  if (parts.length === 1 && ownsWholeBuffer(first)) {
    return first;
  }
  const out = new Float32Array(per * parts.length);
  parts.forEach((p, i) => out.set(p, i * per));
  return out;
}

/** `<model>/<file name>`: names a graph in the stats (a model may run several: model.onnx, stream.onnx, ...). */
function graphName(model: PoolModel): string {
  return `${model.name}/${model.modelPath.split(/[\\/]/).pop() ?? model.modelPath}`;
}

/** How long a closing pool waits for a worker to end by itself before stopping it, ms. */
const WORKER_EXIT_MS = 2000;

export class InferencePool {
  readonly size: number;
  readonly encoderThreads: number;
  readonly maxBatch: number;
  readonly maxBatchSteps: number;
  readonly encoderLanes: number;
  private workers: PoolWorker[] = [];
  private queue: Job[] = [];
  private scheduled = false;
  private readonly dispatchIntervalMs: number;
  private readonly bundle: number;
  private readonly depth: number;
  private readonly behindWaitMs: number;
  /** How long the jobs handed over lately waited in the queue, ms (a running mean, each job weighing WAIT_WEIGHT). */
  private recentWaitMs = 0;
  private lastDispatchAt = -Infinity;
  private intervalTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Batches handed to a worker and not yet answered. */
  private readonly inflight = new Set<Promise<void>>();
  private readonly _stats: PoolStats = { calls: 0, handOvers: 0, windows: 0, steps: 0, busyMs: 0, encoderWindows: 0, encoderBusyMs: 0, windowsBehind: 0, byGraph: {} };

  constructor(options: InferencePoolOptions = {}) {
    const size = options.size ?? defaultInferenceThreads();
    if (!Number.isInteger(size) || size < 1) throw new AurisError('INVALID_ARGUMENT', `pool size must be a positive integer, got ${size}`);
    this.size = size;
    const encoderThreads = options.encoderThreads ?? defaultEncoderThreads();
    if (!Number.isInteger(encoderThreads) || encoderThreads < 1) {
      throw new AurisError('INVALID_ARGUMENT', `encoder threads must be a positive integer, got ${encoderThreads}`);
    }
    this.encoderThreads = encoderThreads;
    this.maxBatch = Math.max(1, options.maxBatch ?? 8);
    this.maxBatchSteps = Math.max(1, options.maxBatchSteps ?? 8192);
    this.dispatchIntervalMs = Math.max(0, options.dispatchIntervalMs ?? 0);
    this.bundle = Math.max(1, Math.floor(options.bundle ?? 1));
    this.depth = Math.max(1, Math.floor(options.depth ?? 1));
    this.behindWaitMs = options.behindWaitMs ?? Infinity;
    const lanes = options.encoderLanes ?? 0;
    if (!Number.isInteger(lanes) || lanes < 0) throw new AurisError('INVALID_ARGUMENT', `encoder lanes must be a non-negative integer, got ${lanes}`);
    this.encoderLanes = lanes;
  }

  /** Whether the jobs handed over lately waited longer than `behindWaitMs` (the workers are behind the load). */
  get behind(): boolean {
    return this.recentWaitMs > this.behindWaitMs;
  }

  get stats(): Readonly<PoolStats> {
    const byGraph = Object.fromEntries(Object.entries(this._stats.byGraph).map(([g, v]) => [g, { ...v }]));
    return { ...this._stats, byGraph };
  }

  private ensureWorkers(): void {
    if (this.closed) throw new AurisError('CLOSED', 'inference pool is closed');
    pinRuntime();
    const add = (lane: boolean | undefined): void => {
      const w = new PoolWorker((dead) => {
        this.workers = this.workers.filter((x) => x !== dead);
        if (!this.closed) this.schedule();
      }, { encoderThreads: this.encoderThreads });
      w.encoderLane = lane;
      this.workers.push(w);
    };
    const lanes = this.encoderLanes > 0;
    while (this.workers.filter((w) => w.encoderLane !== true).length < this.size) add(lanes ? false : undefined);
    while (this.workers.filter((w) => w.encoderLane === true).length < this.encoderLanes) add(true);
  }

  /** Whether `w` may run `model` (with lanes: an encoder only on a lane). */
  private mayRun(w: PoolWorker, model: PoolModel): boolean {
    return w.encoderLane !== false || !isEncoder(model);
  }

  /** The job `w` takes next: on a lane its first encoder job; else the first urgent job it may run, else the first it may run. */
  private nextFor(w: PoolWorker, skip?: ReadonlySet<string>): Job | undefined {
    const may = (j: Job): boolean => this.mayRun(w, j.model) && !skip?.has(j.key);
    const lane = w.encoderLane === true ? this.queue.find((j) => isEncoder(j.model) && !skip?.has(j.key)) : undefined;
    return lane ?? this.queue.find((j) => j.urgent && may(j)) ?? this.queue.find(may);
  }

  /**
   * Creates the sessions of `models` in every worker now (instead of on first use).
   * A missing or corrupt ONNX file rejects with MODEL_LOAD_FAILED naming the file.
   */
  async load(models: readonly PoolModel[]): Promise<void> {
    this.ensureWorkers();
    const replies = await Promise.all(
      this.workers.map((w) => {
        const mine = models.filter((m) => this.mayRun(w, m));
        return mine.length > 0 ? w.call({ type: 'load', models: mine.map(ref) }) : undefined;
      }),
    );
    for (const r of replies) {
      if (!r) continue;
      const e = replyError(r);
      if (e) throw e;
    }
  }

  /**
   * Disposes of the models' sessions in every worker (they are opened again, lazily, by their next use: ~0.3 s for
   * CAM++), giving back their weights and activations. Releases nothing, and resolves false, while a job of one of
   * them waits or runs: an idle moment is the caller's to choose (InferenceEngine.encoding).
   */
  async releaseSessions(models: readonly PoolModel[]): Promise<boolean> {
    const paths = new Set(models.map((m) => m.modelPath));
    if (this.closed || paths.size === 0) return false;
    const busy = this.queue.some((j) => paths.has(j.model.modelPath)) || this.workers.some((w) => [...w.handOvers].some((h) => h.running.some((p) => paths.has(p))));
    if (busy) return false;
    const replies = await Promise.all(
      this.workers.filter((w) => !w.dead && models.some((m) => this.mayRun(w, m))).map((w) => w.call({ type: 'release', models: models.filter((m) => this.mayRun(w, m)).map(ref) })),
    );
    return replies.every((r) => r.type === 'released');
  }

  /**
   * Runs `model` over one window of `steps` 64 ms steps; `features` is [steps*4][64]
   * (time-major). Resolves with [steps][C] probabilities. The pool takes ownership of
   * `features` (its buffer may be transferred to a worker, detaching it here).
   */
  run(model: PoolModel, features: Float32Array, steps: number, urgent = false): Promise<Float32Array> {
    return this.submit(model, features, steps, undefined, urgent).then((out) => out.probs);
  }

  /**
   * Runs a stateful streaming graph over the next `steps` steps of one stream, from `state`
   * (zeros for a new stream). Calls of different streams with the same step count are batched.
   * The pool takes ownership of `features` and `state`.
   */
  /** Embeds one item of a pretrained encoder (`pcm`: model.pcmFloats samples; ownership passes to the pool) -> model.dim floats. */
  runEncoder(model: EncoderPoolModel, pcm: Float32Array): Promise<Float32Array> {
    return this.submit(model, pcm, 1).then((out) => out.probs);
  }

  runStateful(model: StatefulPoolModel, features: Float32Array, steps: number, state: Float32Array, urgent = false): Promise<StatefulResult> {
    if (state.length !== model.stateSize) {
      return Promise.reject(new AurisError('INVALID_ARGUMENT', `state of ${model.name} must have ${model.stateSize} floats, got ${state.length}`));
    }
    return this.submit(model, features, steps, state, urgent);
  }

  private submit(model: PoolModel | StatefulPoolModel, features: Float32Array, steps: number, state?: Float32Array, urgent = false): Promise<StatefulResult> {
    if (this.closed) return Promise.reject(new AurisError('CLOSED', 'inference pool is closed'));
    if (!Number.isInteger(steps) || steps < 1 || features.length !== inputFloats(model, steps)) {
      return Promise.reject(
        new AurisError('INVALID_ARGUMENT', `window of ${steps} steps of ${model.name} needs ${inputFloats(model, steps)} floats, got ${features.length}`),
      );
    }
    return new Promise<StatefulResult>((resolve, reject) => {
      const job: Job = { key: `${model.modelPath}\0${steps}`, model, steps, features, resolve, reject, queuedAt: performance.now() };
      if (state) job.state = state;
      if (urgent) job.urgent = true;
      this.queue.push(job);
      this.schedule(true);
    });
  }

  /**
   * Dispatches soon: a new job waits for the end of the dispatch interval (jobs submitted in
   * the same tick, or under load the same interval, join one batch); a freed worker takes
   * what queued meanwhile at once.
   */
  private schedule(newJob = false): void {
    const wait = newJob ? this.lastDispatchAt + this.dispatchIntervalMs - performance.now() : 0;
    if (wait > 0) {
      // (a worker freed meanwhile does not wait for this timer: it dispatches at once, below)
      this.intervalTimer ??= setTimeout(() => {
        this.intervalTimer = undefined;
        this.dispatch();
      }, wait);
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.dispatch();
    });
  }

  private dispatch(): void {
    if (this.closed || this.queue.length === 0) return;
    try {
      this.ensureWorkers();
    } catch (e) {
      for (const j of this.queue.splice(0)) j.reject(e as Error);
      return;
    }
    // the workers that may take a hand-over now, idle ones first
    const idle = this.workers
      .filter((w) => !w.dead && w.handOvers.size < this.depth && ![...w.handOvers].some((h) => h.encoder))
      .sort((a, b) => a.handOvers.size - b.handOvers.size);
    if (idle.length > 0) this.lastDispatchAt = performance.now();
    while (idle.length > 0 && this.queue.length > 0) {
      const worker = idle[0]!;
      const batches = this.takeBundle(worker, idle);
      idle.shift();
      if (batches.length === 0) continue;
      for (const run of this.runBatches(worker, batches)) {
        this.inflight.add(run);
        void run.finally(() => this.inflight.delete(run));
      }
    }
  }

  /**
   * The batches `worker` takes now (out of the queue): one, or with `bundle` up to that many of different graphs, its
   * part of the graphs waiting beside the other `idle` workers'. An encoder's batch always goes alone.
   */
  private takeBundle(worker: PoolWorker, idle: readonly PoolWorker[]): Job[][] {
    const batches: Job[][] = [];
    // each graph once: what is left of a graph after its batch is the other idle workers' share
    const bundled = new Set<string>();
    for (let room = 1; batches.length < room; ) {
      const head = this.nextFor(worker, bundled);
      if (!head || (batches.length > 0 && isEncoder(head.model))) break;
      bundled.add(head.key);
      batches.push(this.takeBatch(head, idle.filter((w) => this.mayRun(w, head.model)).length));
      if (isEncoder(head.model)) break;
      if (batches.length === 1 && this.bundle > 1) {
        const graphs = new Set(this.queue.filter((j) => !isEncoder(j.model) && !bundled.has(j.key) && this.mayRun(worker, j.model)).map((j) => j.key));
        room = 1 + Math.min(this.bundle - 1, Math.ceil(graphs.size / idle.length));
      }
    }
    return batches;
  }

  /** Takes `head`'s call out of the queue: its graph's jobs, this worker's share when `able` idle workers may run them, within the caps. */
  private takeBatch(head: Job, able: number): Job[] {
    const same = this.queue.filter((j) => j.key === head.key);
    const share = Math.ceil(same.length / able);
    const modelCap = isEncoder(head.model) ? (head.model.maxBatch ?? Infinity) : Infinity;
    const n = Math.max(1, Math.min(share, this.maxBatch, modelCap, Math.floor(this.maxBatchSteps / head.steps)));
    const batch = same.slice(0, n);
    if (this.behind) this._stats.windowsBehind += batch.length;
    const now = performance.now();
    for (const j of batch) this.recentWaitMs += (now - j.queuedAt - this.recentWaitMs) * WAIT_WEIGHT;
    const taken = new Set(batch);
    this.queue = this.queue.filter((j) => !taken.has(j));
    return batch;
  }

  /** Hands `batches` to `worker` (one message for all), and settles each batch's jobs with its answer. */
  private runBatches(worker: PoolWorker, batches: Job[][]): Array<Promise<void>> {
    const prepared = batches.map((b) => this.prepare(b));
    const handOver: HandOver = { running: batches.map((b) => b[0]!.model.modelPath), encoder: isEncoder(batches[0]![0]!.model) };
    worker.handOvers.add(handOver);
    this._stats.handOvers++;
    const replies =
      prepared.length === 1
        ? [worker.call(prepared[0]!.msg, prepared[0]!.transfer)]
        : worker.callMany(prepared.map((p) => p.msg), prepared.flatMap((p) => p.transfer));
    return batches.map((b, i) => this.finish(worker, handOver, b, prepared[i]!, replies[i]!));
  }

  /** A batch's run message: its inputs stacked, its states shared or stacked. */
  private prepare(batch: Job[]): PreparedBatch {
    const { model, steps } = batch[0]!;
    const features = stack(batch.map((j) => j.features), inputFloats(model, steps));
    const stateful = batch[0]!.state !== undefined;
    const stateSize = stateful ? (model as StatefulPoolModel).stateSize : 0;
    // live streams keep their states in shared buffers that the worker updates in place; other states travel
    const shared = stateful && batch.every((j) => isSharedState(j.state!, stateSize));
    const state = stateful && !shared ? stack(batch.map((j) => j.state!), stateSize) : undefined;
    const transfer = [features.buffer as ArrayBuffer];
    if (state) transfer.push(state.buffer as ArrayBuffer);
    const states = shared ? { sharedStates: batch.map((j) => j.state!.buffer as SharedArrayBuffer) } : state ? { state } : {};
    return { msg: { type: 'run', model: ref(model), batch: batch.length, steps, features, ...states }, transfer, stateSize, shared };
  }

  /** Settles a batch's jobs with the worker's answer to its run message. */
  private async finish(worker: PoolWorker, handOver: HandOver, batch: Job[], { stateSize, shared }: PreparedBatch, reply: Promise<FromWorker>): Promise<void> {
    const { model, steps } = batch[0]!;
    const stateful = stateSize > 0;
    try {
      const msg = await reply;
      const err = replyError(msg);
      if (err) throw err;
      if (msg.type !== 'result') throw new AurisError('INFERENCE_FAILED', `unexpected worker reply ${msg.type}`);
      const C = isEncoder(model) ? msg.dims[1]! : msg.dims[2]!;
      if (isEncoder(model) ? C !== model.dim : C !== model.rawKeys.length) {
        throw new AurisError('INFERENCE_FAILED', `model ${model.name} gave ${C} classes, its manifest has ${model.rawKeys.length} raw_keys`);
      }
      if (stateful && !shared && msg.state?.length !== stateSize * batch.length) {
        throw new AurisError('INFERENCE_FAILED', `model ${model.name} returned no state or a state of the wrong size`);
      }
      this._stats.calls++;
      this._stats.windows += batch.length;
      this._stats.steps += steps * batch.length;
      this._stats.busyMs += msg.ms;
      const graph = (this._stats.byGraph[graphName(model)] ??= { busyMs: 0, calls: 0, windows: 0 });
      graph.busyMs += msg.ms;
      graph.calls++;
      graph.windows += batch.length;
      if (isEncoder(model)) {
        this._stats.encoderWindows += batch.length;
        this._stats.encoderBusyMs += msg.ms;
      }
      const out = steps * C;
      const noState = new Float32Array(0);
      batch.forEach((j, i) =>
        j.resolve({
          probs: msg.probs.subarray(i * out, (i + 1) * out),
          state: shared ? j.state! : stateful ? keepShared(j.state!, msg.state!.subarray(i * stateSize, (i + 1) * stateSize)) : noState,
        }),
      );
    } catch (e) {
      for (const j of batch) j.reject(e as Error);
    } finally {
      handOver.running.splice(handOver.running.indexOf(model.modelPath), 1);
      if (handOver.running.length === 0) worker.handOvers.delete(handOver);
      this.schedule();
    }
  }

  /**
   * Rejects queued jobs, lets the batches already running finish (at most `drainMs`), then
   * terminates the workers. Terminating a worker while it is inside onnxruntime's run()
   * makes the binding throw into a dying isolate, which aborts the whole process.
   */
  async close(drainMs = 10_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.intervalTimer);
    for (const j of this.queue.splice(0)) j.reject(new AurisError('CLOSED', 'inference pool closed'));
    if (this.inflight.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs)));
      await Promise.race([Promise.allSettled([...this.inflight]), deadline]);
      clearTimeout(timer);
    }
    const ws = this.workers;
    this.workers = [];
    await Promise.all(ws.map((w) => w.shutdown(WORKER_EXIT_MS)));
  }
}
