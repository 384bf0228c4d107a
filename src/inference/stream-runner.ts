/**
 * Streaming model runner for one (stream, model). Same windowing contract as
 * src/inference's WindowedRunner (a window of output steps [a, b) is run over the features of
 * steps [a - left, b + right], clipped to the signal, so its outputs equal a whole-signal run;
 * docs/features.md), with two scheduling rules for live streams:
 *
 * - **Eager, one call in flight.** As soon as a step has its right context, it is sent to the
 *   model, unless this runner already has a call in flight: steps that become ready meanwhile
 *   join the next call. A lone stream gets one call per 64 ms step (lowest latency); when the
 *   inference workers fall behind, calls cover more steps, so the cost per step drops
 *   (a window's context is paid once per call) instead of the queue growing.
 * - **Output-step aligned.** With output_period = p steps, calls end on multiples of p (an
 *   output step needs all its p steps anyway), so a stream with p > 1 pays the context once
 *   per output step.
 *
 * Only the features of the steps not yet sent plus `left` steps of history are kept.
 *
 * **Stateful graphs.** When the model ships streaming graphs (manifest "streaming", made by
 * training/export/streaming.py), each new step is computed once instead of re-running its whole
 * context window: a graph takes the new steps and the stream's state and returns the outputs
 * `right` steps back (the same lookahead: the first `right` outputs, before the signal start,
 * are dropped) plus the next state. One call in flight and output-step alignment as above.
 * The graphs cannot see the signal end, so after end() the last `right` steps are run
 * windowed (their right context is the end). Both give the whole-file model's numbers.
 */
import { AurisError } from '../errors';
import { sharedState } from './protocol';
import { FLOATS_PER_STEP } from './registry';
import { StepBuffer } from './step-buffer';
import type { InferFn, OutputFn, RunnerModel } from './runner';

/** Runs the stateful graph over steps [firstStep, firstStep + steps) of a stream; takes ownership of the arrays. */
export type StatefulInferFn = (firstStep: number, features: Float32Array, steps: number, state: Float32Array) => Promise<{ probs: Float32Array; state: Float32Array }>;

export interface StatefulGraphOptions {
  /** Floats of state; a zero vector starts a stream. */
  stateSize: number;
  /** Output i of the graph is step i - delaySteps (must equal the model's right context). */
  delaySteps: number;
  infer: StatefulInferFn;
}

export interface StreamRunnerOptions {
  model: RunnerModel;
  infer: InferFn;
  /** Receives consecutive outputs in order. */
  onOutput: OutputFn;
  /** Called once when a model call fails; the runner stops. */
  onError: (e: Error) => void;
  /** Steps per output step: calls end on multiples of it until end() (default 1). */
  align?: number;
  /** Most output steps per call (default 256). */
  maxWindowSteps?: number;
  /** The model's stateful streaming graph, when it has one (see above). */
  stateful?: StatefulGraphOptions;
}

export class StreamRunner {
  readonly model: RunnerModel;
  private readonly left: number;
  private readonly right: number;
  private readonly C: number;
  private readonly align: number;
  private readonly maxWindow: number;
  /** Features of steps [buf.start, received). */
  private readonly buf: StepBuffer;
  private _received = 0;
  /** First step not yet sent to the model. */
  private next = 0;
  private _emitted = 0;
  private inFlight = false;
  private ended = false;
  private closed = false;
  private failed = false;
  private held = false;
  private readonly stateful: StatefulGraphOptions | undefined;
  /** Stateful graph: steps fed so far, and the state after them (undefined while a call has it). */
  private fed = 0;
  private state: Float32Array | undefined;
  /** Model calls made. */
  calls = 0;

  constructor(private readonly options: StreamRunnerOptions) {
    this.model = options.model;
    this.left = options.model.context.leftSteps;
    this.right = options.model.context.rightSteps;
    this.C = options.model.rawKeys.length;
    this.align = Math.max(1, options.align ?? 1);
    this.maxWindow = Math.max(1, options.maxWindowSteps ?? 256);
    this.buf = new StepBuffer(FLOATS_PER_STEP, this.left + this.right + 16);
    const st = options.stateful;
    if (st) {
      if (st.delaySteps !== this.right) {
        throw new AurisError('INVALID_ARGUMENT', `streaming graph of ${this.model.name}: delay ${st.delaySteps} steps, the model's lookahead is ${this.right}`);
      }
      this.stateful = st;
      // the zero start state is made at the first call (pumpStateful): idle streams hold none
    }
  }

  get received(): number {
    return this._received;
  }

  /** Steps whose outputs were delivered. */
  get emitted(): number {
    return this._emitted;
  }

  /** Steps received whose output is not delivered yet beyond the model's own lookahead (backlog). */
  get backlog(): number {
    return Math.max(0, this._received - this.right - this._emitted);
  }

  /** True once end() was called and every step's output was delivered. */
  get done(): boolean {
    return this.ended && this._emitted === this._received && !this.inFlight;
  }

  /** Appends `steps` steps of features ([steps*4][64], copied) and sends what became ready. */
  push(features: Float32Array, steps: number): void {
    if (this.closed || this.failed) return;
    if (this.ended) throw new AurisError('CLOSED', 'push() after end()');
    if (features.length !== steps * FLOATS_PER_STEP) {
      throw new AurisError('INVALID_ARGUMENT', `expected ${FLOATS_PER_STEP} floats per step, got ${features.length} for ${steps} steps`);
    }
    if (steps === 0) return;
    this.buf.append(features);
    this._received += steps;
    this.pump();
  }

  /** No more input: the remaining steps are run with the signal end as their right context. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.pump();
  }

  /** While held, no new model call starts (the one in flight completes); release resumes. */
  hold(on: boolean): void {
    this.held = on;
    if (!on) this.pump();
  }

  /** Drops the buffers; pending and later outputs are discarded. */
  close(): void {
    this.closed = true;
    this.buf.clear();
    this.state = undefined;
  }

  private pump(): void {
    if (this.inFlight || this.closed || this.failed || this.held) return;
    const st = this.stateful;
    // Stateful: feed the graph while it can still give steps the end window would not give.
    if (st && this.fed < this._received && !(this.ended && this._received - st.delaySteps <= this._emitted)) {
      this.pumpStateful(st);
      return;
    }
    if (st && !this.ended) return;
    const limit = this.ended ? this._received : this._received - this.right;
    const b = this.callEnd(this.next, limit, 0);
    if (b > this.next) this.run(this.next, b);
  }

  /**
   * Where a call starting at step `a` ends: at most maxWindow steps, up to `limit`; before end(),
   * its outputs (which lag by `outputLag` steps) end on an output-step boundary, or it waits
   * for the rest of the output step (returns a) unless it is already maxWindow long.
   */
  private callEnd(a: number, limit: number, outputLag: number): number {
    const b = Math.min(limit, a + this.maxWindow);
    if (this.ended || this.align <= 1) return b;
    const aligned = Math.floor((b - outputLag) / this.align) * this.align + outputLag;
    if (aligned > a) return aligned;
    return b - a < this.maxWindow ? a : b;
  }

  /** Feeds the graph the steps not yet fed, ending (until end()) where an output step ends. */
  private pumpStateful(st: StatefulGraphOptions): void {
    const a = this.fed;
    const b = this.callEnd(a, this._received, st.delaySteps);
    if (b <= a) return;
    const features = this.buf.copy(a, b);
    // zeros before the first call; a shared buffer, which the inference worker updates in place
    const state = a === 0 ? sharedState(st.stateSize) : this.state!;
    this.state = undefined;
    this.fed = b;
    this.trim();
    this.call(
      () => st.infer(a, features, b - a, state),
      (out) => {
        if (out.probs.length !== (b - a) * this.C || out.state.length !== st.stateSize) {
          this.fail(new AurisError('INFERENCE_FAILED', `streaming graph of ${this.model.name} returned ${out.probs.length} values for ${b - a} steps x ${this.C} classes`));
          return;
        }
        this.state = out.state;
        // graph output i is step a - delay + i; steps before 0 (and any already emitted) are dropped
        const first = a - st.delaySteps;
        const from = Math.max(this._emitted, first);
        const to = b - st.delaySteps;
        if (to > from) {
          this._emitted = to;
          this.next = to;
          this.options.onOutput(from, out.probs.subarray((from - first) * this.C, (to - first) * this.C), to - from);
        }
        this.pump();
      },
    );
  }

  /** Starts a model call (the one in flight); `done` gets its answer unless the runner was closed or failed meanwhile. */
  private call<T>(start: () => Promise<T>, done: (out: T) => void): void {
    this.inFlight = true;
    this.calls++;
    let job: Promise<T>;
    try {
      job = start();
    } catch (e) {
      job = Promise.reject(e);
    }
    job.then(
      (out) => {
        this.inFlight = false;
        if (!this.closed && !this.failed) done(out);
      },
      (e: unknown) => {
        this.inFlight = false;
        if (!this.closed) this.fail(e instanceof Error ? e : new Error(String(e)));
      },
    );
  }

  /** Drops buffered features no call can need again: before the next window's left context and (stateful) before the next step to feed. */
  private trim(): void {
    let keepFrom = this.next - this.left;
    if (this.stateful) keepFrom = Math.min(keepFrom, this.fed);
    this.buf.dropBefore(keepFrom);
  }

  /** Runs the model for output steps [a, b). */
  private run(a: number, b: number): void {
    const inStart = Math.max(0, a - this.left);
    const inEnd = Math.min(this._received, b + this.right);
    const features = this.buf.copy(inStart, inEnd);
    this.next = b;
    this.trim();
    const steps = inEnd - inStart;
    this.call(
      () => this.options.infer(features, steps),
      (probs) => {
        if (probs.length !== steps * this.C) {
          this.fail(new AurisError('INFERENCE_FAILED', `model ${this.model.name} returned ${probs.length} values for ${steps} steps x ${this.C} classes`));
          return;
        }
        this._emitted = b;
        this.options.onOutput(a, probs.subarray((a - inStart) * this.C, (b - inStart) * this.C), b - a);
        this.pump();
      },
    );
  }

  private fail(e: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.options.onError(e);
  }
}
