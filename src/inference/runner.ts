/**
 * Windowed model runner for one (channel, model): receives features step by step, runs the
 * model over windows of at most `windowSteps` output steps, each with the manifest's
 * left/right context (or the signal edge) around it, and emits per-step probabilities in
 * order as soon as a window's right context has arrived.
 *
 * Because a step's output depends only on steps [s - left, s + right] (docs/features.md),
 * the emitted numbers equal a single whole-signal run, while memory stays bounded by
 * windowSteps + left + right steps of features.
 *
 * File mode: windowSteps = minWindowSteps = 1024 (few, large calls).
 * Streaming: minWindowSteps = 1 -> a step is emitted once `right` more steps have arrived.
 */
import { AurisError } from '../errors';
import { FLOATS_PER_STEP } from './registry';
import { StepBuffer } from './step-buffer';

export interface RunnerModel {
  name: string;
  rawKeys: readonly string[];
  context: { leftSteps: number; rightSteps: number };
}

/** Runs the model over one window: features [steps*4][64] -> probabilities [steps][C]. Takes ownership of `features`. */
export type InferFn = (features: Float32Array, steps: number) => Promise<Float32Array>;

/** Receives consecutive output: `steps` steps starting at `startStep`, probabilities [steps][C]. */
export type OutputFn = (startStep: number, probs: Float32Array, steps: number) => void;

export interface WindowedRunnerOptions {
  model: RunnerModel;
  infer: InferFn;
  onOutput: OutputFn;
  /** Most output steps per model call (default 1024 = 65.5 s). */
  windowSteps?: number;
  /** Fewest output steps worth a call before end() (default windowSteps; 1 for streaming). */
  minWindowSteps?: number;
}

export class WindowedRunner {
  readonly model: RunnerModel;
  readonly windowSteps: number;
  readonly minWindowSteps: number;
  private readonly left: number;
  private readonly right: number;
  private readonly C: number;
  private readonly infer: InferFn;
  private readonly onOutput: OutputFn;

  /** Features of steps [buf.start, received). */
  private readonly buf: StepBuffer;
  /** First step not yet scheduled. */
  private next = 0;
  private _emitted = 0;
  private ended = false;
  private tail: Promise<void> = Promise.resolve();
  private failure: Error | undefined;

  constructor(options: WindowedRunnerOptions) {
    this.model = options.model;
    this.left = options.model.context.leftSteps;
    this.right = options.model.context.rightSteps;
    this.C = options.model.rawKeys.length;
    this.infer = options.infer;
    this.onOutput = options.onOutput;
    this.windowSteps = options.windowSteps ?? 1024;
    this.minWindowSteps = options.minWindowSteps ?? this.windowSteps;
    if (!Number.isInteger(this.windowSteps) || this.windowSteps < 1) {
      throw new AurisError('INVALID_ARGUMENT', `windowSteps must be a positive integer, got ${this.windowSteps}`);
    }
    if (!Number.isInteger(this.minWindowSteps) || this.minWindowSteps < 1 || this.minWindowSteps > this.windowSteps) {
      throw new AurisError('INVALID_ARGUMENT', `minWindowSteps must be in 1..windowSteps, got ${this.minWindowSteps}`);
    }
    this.buf = new StepBuffer(FLOATS_PER_STEP, this.windowSteps + this.left + this.right + 64);
  }

  /** Steps received so far. */
  get received(): number {
    return this.buf.end;
  }

  /** Steps emitted through onOutput so far. */
  get emitted(): number {
    return this._emitted;
  }

  /** Steps of features currently held. */
  get bufferedSteps(): number {
    return this.buf.length;
  }

  /**
   * Appends `steps` steps of features ([steps*4][64], copied) and starts every window that
   * became ready. Resolves once everything started so far has been emitted; rejects if a
   * model call failed (and every later push/end rejects too).
   */
  push(features: Float32Array, steps: number = features.length / FLOATS_PER_STEP): Promise<void> {
    if (this.ended) return Promise.reject(new AurisError('CLOSED', 'push() after end()'));
    if (this.failure) return Promise.reject(this.failure);
    if (!Number.isInteger(steps) || steps < 0 || features.length !== steps * FLOATS_PER_STEP) {
      return Promise.reject(new AurisError('INVALID_ARGUMENT', `expected ${FLOATS_PER_STEP} floats per step, got ${features.length} for ${steps} steps`));
    }
    this.buf.append(features);
    while (this.buf.end - this.right - this.next >= this.minWindowSteps) {
      const core = Math.min(this.windowSteps, this.buf.end - this.right - this.next);
      this.schedule(this.next, this.next + core);
    }
    return this.tail;
  }

  /** No more input: runs the remaining windows (their right context is the signal end). */
  end(): Promise<void> {
    if (!this.ended) {
      this.ended = true;
      while (this.next < this.buf.end) {
        this.schedule(this.next, Math.min(this.buf.end, this.next + this.windowSteps));
      }
    }
    return this.tail;
  }

  /** Starts the model call for output steps [a, b). */
  private schedule(a: number, b: number): void {
    const inStart = Math.max(0, a - this.left);
    const inEnd = Math.min(this.buf.end, b + this.right);
    const features = this.buf.copy(inStart, inEnd);
    this.next = b;
    this.buf.dropBefore(this.next - this.left); // what no later window needs
    let job: Promise<Float32Array>;
    try {
      job = this.infer(features, inEnd - inStart);
    } catch (e) {
      job = Promise.reject(e);
    }
    job.catch(() => undefined); // handled through the tail chain below
    const C = this.C;
    this.tail = this.tail.then(async () => {
      let probs: Float32Array;
      try {
        probs = await job;
      } catch (e) {
        this.failure ??= e as Error;
        throw e;
      }
      if (probs.length !== (inEnd - inStart) * C) {
        const err = new AurisError('INFERENCE_FAILED', `model ${this.model.name} returned ${probs.length} values for ${inEnd - inStart} steps x ${C} classes`);
        this.failure ??= err;
        throw err;
      }
      this.onOutput(a, probs.subarray((a - inStart) * C, (b - inStart) * C), b - a);
      this._emitted = b;
    });
    // Failures surface through push()/end(); never as an unhandled rejection.
    this.tail.catch(() => undefined);
  }
}
