/**
 * InferenceEngine = model registry + worker pool: what the pipeline, the HTTP service and
 * streaming need to run models. One engine per process is enough (see sharedEngine()).
 */
import * as path from 'node:path';
import { AurisError } from '../errors';
import { trimNativeMemory } from '../audio';
import { defaultModelsDir, defaultWindowSteps } from './env';
import { InferencePool, InferencePoolOptions, StatefulPoolModel, StatefulResult, type PoolModel } from './pool';
import { ModelInfo, ModelRegistry } from './registry';
import { OutputFn, WindowedRunner } from './runner';
import { EncoderStage, type WindowOutcome } from './encoder-stage';
import { ChannelViews } from './channel-views';
import { ClusteringThread } from '../speakers/clustering-thread';

export interface EngineOptions extends InferencePoolOptions {
  /** Default: $AURIS_MODELS_DIR, else <package root>/models. */
  modelsDir?: string;
  /** Open every ONNX file on the main thread at start-up to validate it (default true). */
  verify?: boolean;
  /** Create sessions for these models in every worker at start-up (default: none, lazily). */
  preload?: readonly string[] | 'all';
  /** Default window for file processing, output steps per call (default $AURIS_WINDOW_STEPS or 1024). */
  windowSteps?: number;
}

export interface RunnerOptions {
  /** Most output steps per model call (default: the engine's windowSteps). */
  windowSteps?: number;
  /** Fewest output steps per call before end() (default windowSteps; use 1 for streaming). */
  minWindowSteps?: number;
}

export class InferenceEngine {
  readonly windowSteps: number;
  /**
   * The speaker map's clusterings, off the main thread (src/speakers/clustering-thread.ts): one
   * thread for file jobs' (seconds for an hour; ended when idle, so its heap does not outlive the clustering), one
   * for live streams' (so these never wait behind a file's).
   */
  readonly clustering = { files: new ClusteringThread('files', true), streams: new ClusteringThread('streams') };

  private constructor(
    readonly registry: ModelRegistry,
    readonly pool: InferencePool,
    windowSteps: number,
  ) {
    this.windowSteps = windowSteps;
  }

  /**
   * Loads and validates the registry (a bad manifest or ONNX file rejects with
   * MODEL_LOAD_FAILED naming the file) and starts the worker pool.
   */
  static async create(options: EngineOptions = {}): Promise<InferenceEngine> {
    const registryOptions: { modelsDir?: string; verify?: boolean } = {};
    if (options.modelsDir !== undefined) registryOptions.modelsDir = options.modelsDir;
    if (options.verify !== undefined) registryOptions.verify = options.verify;
    const registry = await ModelRegistry.load(registryOptions);
    const pool = new InferencePool(options);
    const windowSteps = options.windowSteps ?? defaultWindowSteps();
    const engine = new InferenceEngine(registry, pool, windowSteps);
    if (options.preload) {
      const models = options.preload === 'all' ? registry.list() : registry.resolve(options.preload);
      try {
        // a speaker map has no network: its encoder is what runs
        await pool.load(models.map((m) => m.speakerMap?.encoder ?? m));
      } catch (e) {
        await pool.close();
        throw e;
      }
      // Opening the models (the registry's checks on this thread, the workers' sessions) frees far more than it
      // keeps, and glibc holds on to it: an idle server sat at ~285 MiB, ~230 once given back (docs/deploy.md).
      // Housekeeping only: without the addon (or the call) the engine still starts.
      await trimNativeMemory().catch(() => false);
    }
    return engine;
  }

  /** File jobs embedding with pretrained encoders now (encoding()). */
  private embeddingJobs = 0;

  /**
   * Counts a file job that embeds with the pretrained encoders of `models` (the speaker map's, encoder views') until
   * the returned `finish` is called (once: later calls do nothing and resolve false). `finish(true)` once the job's
   * audio is embedded and no other file job is embedding: the encoders' sessions are disposed of in every worker
   * (InferencePool.releaseSessions; reopened by their next use, ~0.3 s). CAM++'s weights and activations, one
   * copy per worker, are what a long speaker-map job no longer needs while it clusters: the 1-hour file of ten
   * voices peaked 301-319 MiB with two workers, now at its decoding's plateau (docs/benchmarks.md, session 37). A
   * live stream's encoder call on the same engine (not the server's: its streams have their own engine) would
   * reopen its session. Housekeeping: a failed release is not the job's failure (resolves false).
   */
  encoding(models: readonly ModelInfo[]): (release: boolean) => Promise<boolean> {
    const encoders = encodersOf(models);
    if (encoders.length === 0) return () => Promise.resolve(false);
    this.embeddingJobs++;
    let finished = false;
    return async (release) => {
      if (finished) return false;
      finished = true;
      this.embeddingJobs--;
      if (!release || this.embeddingJobs > 0) return false;
      return this.pool.releaseSessions(encodersOf(this.registry.list())).catch(() => false);
    };
  }

  /** Valid model names. */
  models(): string[] {
    return this.registry.names();
  }

  model(name: string): ModelInfo {
    return this.registry.get(name);
  }

  /**
   * Runs one window of `model` (features [steps*4][64], ownership passes to the pool); an
   * urgent window is dispatched before the queued ones (InferencePool.run).
   */
  infer(model: string | ModelInfo, features: Float32Array, steps: number, urgent = false): Promise<Float32Array> {
    const info = typeof model === 'string' ? this.registry.get(model) : model;
    return this.pool.run(info, features, steps, urgent);
  }

  /**
   * Runs steps [firstStep, firstStep + steps) of one stream through `model`'s stateful
   * streaming graphs (the start graph while firstStep < startSteps; registry StreamingGraph);
   * ownership of `features` and `state` passes to the pool.
   */
  inferStateful(model: string | ModelInfo, firstStep: number, features: Float32Array, steps: number, state: Float32Array): Promise<StatefulResult> {
    const info = typeof model === 'string' ? this.registry.get(model) : model;
    const g = info.streaming;
    if (!g) return Promise.reject(new AurisError('INVALID_ARGUMENT', `model ${info.name} has no streaming graph`));
    let graphs = this.streamGraphs.get(info);
    if (!graphs) {
      const base = { ...g, name: info.name, rawKeys: info.rawKeys };
      graphs = { start: { ...base, modelPath: g.startModelPath }, steady: base };
      this.streamGraphs.set(info, graphs);
    }
    return this.pool.runStateful(firstStep < g.startSteps ? graphs.start : graphs.steady, features, steps, state);
  }

  /**
   * Runs steps [firstStep, firstStep + steps) of one stream through `model`'s causal provisional head (registry
   * ProvisionalHead: one graph, exact from a zero state); ownership of `features` and `state` passes to the pool.
   * Urgent (dispatched before queued calls) for the fastest tier of provisional answers, as its windows were.
   */
  inferHead(model: ModelInfo, features: Float32Array, steps: number, state: Float32Array, urgent = false): Promise<StatefulResult> {
    const h = model.provisionalHead;
    if (!h) return Promise.reject(new AurisError('INVALID_ARGUMENT', `model ${model.name} has no provisional head`));
    let graph = this.headGraphs.get(model);
    if (!graph) {
      graph = { ...h, name: model.name, rawKeys: model.rawKeys };
      this.headGraphs.set(model, graph);
    }
    return this.pool.runStateful(graph, features, steps, state, urgent);
  }

  private readonly headGraphs = new WeakMap<ModelInfo, StatefulPoolModel>();

  /** The pool's view of each model's two streaming graphs (built once: this is on every stream step's path). */
  private readonly streamGraphs = new WeakMap<ModelInfo, { start: StatefulPoolModel; steady: StatefulPoolModel }>();

  /** A windowed runner of `model` feeding `onOutput` (one per channel and model). */
  runner(model: string | ModelInfo, onOutput: OutputFn, options: RunnerOptions = {}): WindowedRunner {
    const info = typeof model === 'string' ? this.registry.get(model) : model;
    const windowSteps = options.windowSteps ?? this.windowSteps;
    return new WindowedRunner({
      model: info,
      infer: (features, steps) => this.pool.run(info, features, steps),
      onOutput,
      windowSteps,
      minWindowSteps: options.minWindowSteps ?? windowSteps,
    });
  }

  /** The encoder views of one channel (channel-views.ts): attach each model, then push to its stages. */
  channelViews(): ChannelViews {
    return new ChannelViews((encoder, pcm) => this.pool.runEncoder(encoder, pcm));
  }

  /**
   * The encoder stage of a speaker-map model's channel (src/speakers): every voiced window of its
   * schedule is embedded on the pool and reported, in order, to `onWindow`; for a live stream
   * (`live`) also the sparse windows its manifest names (manifest.ts sparseMinVoicedSteps), for a
   * file job not the windows its file speech gate refuses (the speech model's decisions, pushed by
   * ChannelViews.attachSpeech once the stage is adopted).
   */
  speakerStage(model: ModelInfo, onWindow: (o: WindowOutcome) => void | Promise<void>, { live = false } = {}): EncoderStage {
    const map = model.speakerMap;
    if (!map) throw new AurisError('INVALID_ARGUMENT', `model ${model.name} is not a speaker map`);
    const embed = (pcm: Float32Array): Promise<Float32Array[]> => this.pool.runEncoder(map.encoder, pcm).then((e) => [e]);
    const sparse = live && map.sparseMinVoicedSteps !== undefined ? { sparseMinVoicedSteps: map.sparseMinVoicedSteps } : {};
    const schedule = !live && map.fileSpeechGate ? { ...map.schedule, speechGate: map.fileSpeechGate } : map.schedule;
    return new EncoderStage({ schedule, embed, onWindow, ...sparse });
  }

  async close(): Promise<void> {
    await Promise.all([this.clustering.files.close(), this.clustering.streams.close()]);
    await this.pool.close();
  }
}

/** The pretrained encoders the models run (one entry per encoder file). */
function encodersOf(models: readonly ModelInfo[]): PoolModel[] {
  const all = models.flatMap((m) => [...(m.speakerMap ? [m.speakerMap.encoder] : []), ...(m.views?.views ?? []).map((v) => v.encoder)]);
  return [...new Map(all.map((e) => [e.modelPath, e])).values()];
}

const shared = new Map<string, Promise<InferenceEngine>>();

/**
 * The process-wide engine for a models directory (created on first use, then reused).
 * Idle workers do not keep the process alive.
 */
export function sharedEngine(options: EngineOptions = {}): Promise<InferenceEngine> {
  const dir = path.resolve(options.modelsDir ?? defaultModelsDir());
  let e = shared.get(dir);
  if (!e) {
    e = InferenceEngine.create({ ...options, modelsDir: dir });
    shared.set(dir, e);
    // A failed start-up is not cached: the next call retries (e.g. after models land).
    e.catch(() => shared.delete(dir));
  }
  return e;
}

/** Closes every shared engine (tests, graceful shutdown). */
export async function closeSharedEngines(): Promise<void> {
  const all = [...shared.values()];
  shared.clear();
  for (const p of all) {
    try {
      await (await p).close();
    } catch (e) {
      if (!(e instanceof AurisError)) throw e;
    }
  }
}
