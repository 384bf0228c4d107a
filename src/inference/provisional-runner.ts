/**
 * Provisional model runner for one (stream, model): early answers with truncated lookahead
 * (docs/streaming.md "Provisional results").
 *
 * The final outputs of a live stream wait for the model's whole right context (speech 12
 * steps = 776 ms, the speaker models 24 steps). This runner runs the same network as soon as
 * an output step's audio plus `lookahead` steps (P: provisionalPlan below) have arrived, over a
 * window whose input ends there: the missing future is treated like the end of the signal, the
 * way the windowed runner treats a file's last steps (src/inference/runner.ts end()). So a
 * provisional output is what the model would say if the audio stopped P steps later.
 *
 * Cheap by construction: one call in flight per runner; a call covers every output step that
 * became ready meanwhile (under load, fewer calls), its input is [a - left, b + P) with `left`
 * the plan's left context, which may be shorter than the model's (the same
 * length for every stream in steady state, so the pool batches calls of many streams); steps
 * whose final output was already sent (`finalFrom()`) are skipped, never computed, and so are
 * output steps whose answer no message would show (`shows`: silence, no speech).
 */
import { AurisError } from '../errors';
import { EarlyRunner } from './live-runner';
import type { InferFn, OutputFn, RunnerModel } from './runner';

/** How soon and how often a model answers provisionally (docs/streaming.md "Different delays per model"). */
export interface ProvisionalPlan {
  /** Steps of lookahead (P). */
  lookahead: number;
  /** A call every `stride` steps, covering them: a group's first step waits stride - 1 steps more. */
  stride: number;
  /**
   * Steps of left context in a call's window (at most the model's): the window starts there as a
   * signal would. Fewer than the model's reach cost little accuracy for a provisional answer
   * (training/validate/provisional.py) and shorten every call.
   */
  leftContext: number;
}

/**
 * The plan of a network without a scored one (models/<name>/provisional.json, read by the registry):
 * by its right context, as the shipped models' were chosen. Speech-like (12 steps or fewer each way):
 * 1 step (64 ms) of lookahead, every step, 8 steps of left context.
 */
export const FAST_PROVISIONAL: ProvisionalPlan = { lookahead: 1, stride: 1, leftContext: 8 };
/** Speaker-model-like (24 steps each way): no lookahead, a call every 4 steps, 12 steps of left context. */
export const SLOW_PROVISIONAL: ProvisionalPlan = { lookahead: 0, stride: 4, leftContext: 12 };

/**
 * A model's plan, its stride a multiple of the output period (`per` steps: an output step needs all its steps): the
 * override (benchmarks, tests), else the plan its validation chose (`provisional`: models/<name>/provisional.json
 * `shipped`, written by training/validate/provisional.py --write; its figures are in the model's card), else a
 * default by its context.
 */
export function provisionalPlan(model: Pick<RunnerModel, 'context'> & { provisional?: ProvisionalPlan }, per: number, override?: ProvisionalPlan): ProvisionalPlan {
  const base = override ?? model.provisional ?? (model.context.rightSteps <= 12 ? FAST_PROVISIONAL : SLOW_PROVISIONAL);
  return {
    lookahead: Math.min(base.lookahead, model.context.rightSteps),
    stride: Math.max(1, Math.ceil(base.stride / per)) * per,
    leftContext: Math.min(base.leftContext, model.context.leftSteps),
  };
}

export interface ProvisionalRunnerOptions {
  model: RunnerModel;
  infer: InferFn;
  /** Receives provisional outputs, in increasing step order (steps may be skipped). */
  onOutput: OutputFn;
  onError: (e: Error) => void;
  /** Steps of lookahead (P); at most the model's right context. */
  lookahead: number;
  /** Steps of left context in a window (default and at most the model's). */
  leftContext?: number;
  /** Steps per output step: calls start and end on multiples of it (default 1). */
  align?: number;
  /** Most output steps per call (default 64). */
  maxWindowSteps?: number;
  /** First step whose final output is not sent yet: earlier steps are not worth a provisional result. */
  finalFrom: () => number;
  /**
   * False when no output step of steps [from, to) (one group of `align` steps) can show this
   * model's answer (silent, or no_speech for a model the speech model gates, and no raw values
   * asked for): no call covers them and zeros stand in for their outputs, which no message shows.
   */
  shows?: (from: number, to: number) => boolean;
}

export class ProvisionalRunner extends EarlyRunner {
  readonly lookahead: number;
  private readonly left: number;
  private readonly align: number;
  private readonly maxWindow: number;
  /** Calls not made because their steps could not show the answer (`shows`). */
  skipped = 0;

  constructor(private readonly options: ProvisionalRunnerOptions) {
    const model = options.model;
    const left = Math.max(0, Math.min(options.leftContext ?? model.context.leftSteps, model.context.leftSteps));
    const align = Math.max(1, options.align ?? 1);
    const lookahead = Math.max(0, Math.min(options.lookahead, model.context.rightSteps));
    super(model, left + lookahead + align + 16, options.onError);
    if (!Number.isInteger(lookahead)) throw new AurisError('INVALID_ARGUMENT', `provisional lookahead must be an integer, got ${options.lookahead}`);
    this.left = left;
    this.align = align;
    this.lookahead = lookahead;
    this.maxWindow = Math.max(align, Math.floor((options.maxWindowSteps ?? 64) / align) * align);
  }

  /** Starts a call for the ready output steps not yet covered and whose final is not sent. */
  protected pump(): void {
    for (;;) {
      if (this.inFlight || this.closed || this.failed || this.held || this.ended) return;
      const finalFrom = this.options.finalFrom();
      const a = Math.max(this.next, Math.ceil(finalFrom / this.align) * this.align);
      const ready = this.receivedSteps - this.lookahead;
      let b = Math.min(a + this.maxWindow, a + Math.floor((ready - a) / this.align) * this.align);
      if (b <= a) {
        this.trim(a);
        return;
      }
      if (this.options.shows?.(a, a + this.align) === false) {
        // silence or no speech throughout this group: its answers would not show, so no call for it
        this.next = a + this.align;
        this.trim(this.next);
        this.skipped++;
        this.options.onOutput(a, new Float32Array(this.align * this.C), this.align);
        continue;
      }
      // a call ends before the next group that would not show (the next pump skips that one)
      for (let g = a + this.align; g < b; g += this.align) {
        if (this.options.shows?.(g, g + this.align) === false) {
          b = g;
          break;
        }
      }
      this.next = b;
      const inStart = Math.max(0, a - this.left);
      const inEnd = Math.min(this.receivedSteps, b + this.lookahead);
      const features = this.buf.copy(inStart, inEnd);
      this.trim(b);
      const steps = inEnd - inStart;
      this.call(
        () => this.options.infer(features, steps),
        (probs) => {
          if (!this.checkOutput(probs.length, steps)) return;
          this.options.onOutput(a, probs.subarray((a - inStart) * this.C, (b - inStart) * this.C), b - a);
          this.pump();
        },
      );
      return;
    }
  }

  /** Keeps only the left context of the next call's first step. */
  private trim(nextStart: number): void {
    this.buf.dropBefore(nextStart - this.left);
  }
}
