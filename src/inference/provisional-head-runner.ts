/**
 * Provisional answers of one (stream, model) from the model's causal head (registry ProvisionalHead; trained by
 * training/recipes/causal.py): a stateful graph that hears nothing after a step but its `delaySteps` of lookahead, so
 * each new step is computed once, from the stream's state, instead of re-running the network over a truncated window
 * for every step (ProvisionalRunner). Speech's head answers a step 64 ms after its audio, as the window plan did, at a
 * tenth of the computation, and is as accurate as the finals on the validation (models/speech/provisional.json).
 *
 * Same contract as ProvisionalRunner for ProvisionalResults: outputs in increasing step order, one call in flight (the
 * steps that arrive meanwhile join the next call), whole groups of `stride` steps per call (a head that may wait for
 * its group, as arousal's: a quarter of the calls; `groupsPerCall`: calls that end on every other group while the
 * inference pool is behind), nothing after end(). Every step is fed (the state must see it), so there is no skipping
 * of silent steps; outputs of steps whose final went out first are dropped by the caller.
 */
import { AurisError } from '../errors';
import { EarlyRunner, type StatefulInferFn } from './live-runner';
import type { OutputFn, RunnerModel } from './runner';

export interface HeadRunnerOptions {
  model: RunnerModel;
  /** Floats of state (a zero vector starts a stream). */
  stateSize: number;
  /** Output i of the steps fed answers step i - delaySteps. */
  delaySteps: number;
  /** Steps per call: the graph is fed whole groups of `stride` steps (default 1: every step). */
  stride?: number;
  /**
   * Calls end on multiples of `stride` times this (read at each call; default 1). 2 while the workers are behind: about
   * half the calls, each of more steps, for about the same cost per call; the head's answers do not depend on how its
   * steps are grouped.
   */
  groupsPerCall?: () => number;
  infer: StatefulInferFn;
  /** Receives provisional outputs, in increasing step order. */
  onOutput: OutputFn;
  onError: (e: Error) => void;
}

export class HeadRunner extends EarlyRunner {
  readonly lookahead: number;
  private readonly stride: number;
  /** Steps fed to the graph (the state after them: graphState). */
  private fed = 0;

  constructor(private readonly options: HeadRunnerOptions) {
    super(options.model, 32, options.onError);
    if (!Number.isInteger(options.delaySteps) || options.delaySteps < 0) {
      throw new AurisError('INVALID_ARGUMENT', `provisional head of ${options.model.name}: delay must be an integer >= 0, got ${options.delaySteps}`);
    }
    this.lookahead = options.delaySteps;
    this.stride = Math.max(1, Math.floor(options.stride ?? 1));
  }

  protected pump(): void {
    if (this.inFlight || this.closed || this.failed || this.held || this.ended) return;
    const a = this.fed;
    const group = this.stride * (this.options.groupsPerCall?.() ?? 1);
    const b = Math.floor(this.receivedSteps / group) * group;
    if (b <= a) return;
    const features = this.buf.copy(a, b);
    this.fed = b;
    this.buf.dropBefore(b);
    this.callStateful(a, features, b - a, this.options.stateSize, this.options.infer, `provisional head of ${this.model.name}`, (probs) => {
      // output i is step a - delay + i; steps before the signal start are dropped
      const first = a - this.lookahead;
      const from = Math.max(0, first);
      const to = b - this.lookahead;
      if (to > from) this.options.onOutput(from, probs.subarray((from - first) * this.C, (to - first) * this.C), to - from);
      this.pump();
    });
  }
}
