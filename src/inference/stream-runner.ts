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
 * windowed (their right context is the end). Both give the whole-file model's numbers. The first
 * call waits until it can give an output (`right` + 1 steps): the steps before give none.
 */
import { AurisError } from '../errors';
import { LiveRunner, type StatefulInferFn } from './live-runner';
import type { InferFn, OutputFn, RunnerModel } from './runner';

export type { StatefulInferFn } from './live-runner';

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

export class StreamRunner extends LiveRunner {
  private readonly left: number;
  private readonly right: number;
  private readonly align: number;
  private readonly maxWindow: number;
  private _emitted = 0;
  private readonly stateful: StatefulGraphOptions | undefined;
  /** Stateful graph: steps fed so far (the state after them: graphState). */
  private fed = 0;

  constructor(private readonly options: StreamRunnerOptions) {
    super(options.model, options.model.context.leftSteps + options.model.context.rightSteps + 16, options.onError);
    this.left = options.model.context.leftSteps;
    this.right = options.model.context.rightSteps;
    this.align = Math.max(1, options.align ?? 1);
    this.maxWindow = Math.max(1, options.maxWindowSteps ?? 256);
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
    return this.receivedSteps;
  }

  /** Steps whose outputs were delivered. */
  get emitted(): number {
    return this._emitted;
  }

  /** Steps received whose output is not delivered yet beyond the model's own lookahead (backlog). */
  get backlog(): number {
    return Math.max(0, this.receivedSteps - this.right - this._emitted);
  }

  /** True once end() was called and every step's output was delivered. */
  get done(): boolean {
    return this.ended && this._emitted === this.receivedSteps && !this.inFlight;
  }

  /** Appends `steps` steps of features ([steps*4][64], copied) and sends what became ready. */
  push(features: Float32Array, steps: number): void {
    if (this.ended && !this.closed && !this.failed) throw new AurisError('CLOSED', 'push() after end()');
    if (this.append(features, steps)) this.pump();
  }

  /** No more input: the remaining steps are run with the signal end as their right context. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.pump();
  }

  protected pump(): void {
    if (this.inFlight || this.closed || this.failed || this.held) return;
    const st = this.stateful;
    // Stateful: feed the graph while it can still give steps the end window would not give.
    if (st && this.fed < this.receivedSteps && !(this.ended && this.receivedSteps - st.delaySteps <= this._emitted)) {
      this.pumpStateful(st);
      return;
    }
    if (st && !this.ended) return;
    const limit = this.ended ? this.receivedSteps : this.receivedSteps - this.right;
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
    // Until more than `delaySteps` steps are in, every output the graph would give lies before the signal start and
    // is dropped: the first call waits for them (one start-graph call per stream instead of one per step, and the
    // first results come exactly as soon).
    if (!this.ended && this.receivedSteps <= st.delaySteps) return;
    const a = this.fed;
    const b = this.callEnd(a, this.receivedSteps, st.delaySteps);
    if (b <= a) return;
    const features = this.buf.copy(a, b);
    this.fed = b;
    this.trim();
    this.callStateful(a, features, b - a, st.stateSize, st.infer, `streaming graph of ${this.model.name}`, (probs) => {
      // graph output i is step a - delay + i; steps before 0 (and any already emitted) are dropped
      const first = a - st.delaySteps;
      const from = Math.max(this._emitted, first);
      const to = b - st.delaySteps;
      if (to > from) {
        this._emitted = to;
        this.next = to;
        this.options.onOutput(from, probs.subarray((from - first) * this.C, (to - first) * this.C), to - from);
      }
      this.pump();
    });
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
    const inEnd = Math.min(this.receivedSteps, b + this.right);
    const features = this.buf.copy(inStart, inEnd);
    this.next = b;
    this.trim();
    const steps = inEnd - inStart;
    this.call(
      () => this.options.infer(features, steps),
      (probs) => {
        if (!this.checkOutput(probs.length, steps)) return;
        this._emitted = b;
        this.options.onOutput(a, probs.subarray((a - inStart) * this.C, (b - inStart) * this.C), b - a);
        this.pump();
      },
    );
  }
}
