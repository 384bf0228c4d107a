/**
 * What the runners of a live stream share (StreamRunner: finals; ProvisionalRunner: early
 * answers): the stream's features buffered as steps arrive, at most one model call in flight
 * (steps that arrive meanwhile join the next call), hold / close, and one failure reported
 * once. Each subclass decides in pump() which call to start next.
 */
import { AurisError } from '../errors';
import { sharedState } from './protocol';
import { FLOATS_PER_STEP } from './registry';
import { StepBuffer } from './step-buffer';
import type { RunnerModel } from './runner';

/** Runs a stateful graph over steps [firstStep, firstStep + steps) of a stream; takes ownership of the arrays. */
export type StatefulInferFn = (firstStep: number, features: Float32Array, steps: number, state: Float32Array) => Promise<{ probs: Float32Array; state: Float32Array }>;

export abstract class LiveRunner {
  readonly model: RunnerModel;
  /** Classes per output step. */
  protected readonly C: number;
  /** Features of steps [buf.start, receivedSteps). */
  protected readonly buf: StepBuffer;
  protected receivedSteps = 0;
  /** First step not yet sent to the model. */
  protected next = 0;
  protected inFlight = false;
  protected ended = false;
  protected closed = false;
  protected failed = false;
  protected held = false;
  /** Model calls made. */
  calls = 0;
  /** A stateful graph's state after the steps fed so far (undefined before the first call and while a call has it). */
  protected graphState: Float32Array | undefined;

  constructor(
    model: RunnerModel,
    /** Steps the buffer is sized for at first (it grows when needed). */
    bufferSteps: number,
    private readonly onError: (e: Error) => void,
  ) {
    this.model = model;
    this.C = model.rawKeys.length;
    this.buf = new StepBuffer(FLOATS_PER_STEP, bufferSteps);
  }

  /** While held, no new model call starts (the one in flight completes); release resumes. */
  hold(on: boolean): void {
    this.held = on;
    if (!on) this.pump();
  }

  /** Stops at once: no new call, the buffered features and the graph's state dropped (a call in flight is ignored). */
  close(): void {
    this.closed = true;
    this.buf.clear();
    this.graphState = undefined;
  }

  /** Starts the next model call when one is due (and none is in flight). */
  protected abstract pump(): void;

  /** Buffers `steps` steps of features ([steps*4][64], copied); false when the runner takes no more. */
  protected append(features: Float32Array, steps: number): boolean {
    if (this.closed || this.failed || steps === 0) return false;
    if (features.length !== steps * FLOATS_PER_STEP) {
      throw new AurisError('INVALID_ARGUMENT', `expected ${FLOATS_PER_STEP} floats per step, got ${features.length} for ${steps} steps`);
    }
    this.buf.append(features);
    this.receivedSteps += steps;
    return true;
  }

  /** Starts a model call (the one in flight); `done` gets its answer unless the runner was closed or failed meanwhile. */
  protected call<T>(start: () => Promise<T>, done: (out: T) => void): void {
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

  /**
   * Feeds `features` of steps [a, a + steps) to a stateful graph from the state after step a (a zero state in a shared
   * buffer, which the inference worker updates in place, at a = 0), keeps the state it returns and gives `done` its
   * probabilities [steps][C]; an answer of the wrong size fails the runner.
   */
  protected callStateful(a: number, features: Float32Array, steps: number, stateSize: number, infer: StatefulInferFn, what: string, done: (probs: Float32Array) => void): void {
    const state = a === 0 ? sharedState(stateSize) : this.graphState!;
    this.graphState = undefined;
    this.call(
      () => infer(a, features, steps, state),
      (out) => {
        if (!this.checkOutput(out.probs.length, steps, what)) return;
        if (out.state.length !== stateSize) {
          this.fail(new AurisError('INFERENCE_FAILED', `${what} returned a state of ${out.state.length} floats, expected ${stateSize}`));
          return;
        }
        this.graphState = out.state;
        done(out.probs);
      },
    );
  }

  /** A window's probabilities have the size asked for, or the runner fails (true when they do). */
  protected checkOutput(values: number, steps: number, what = `model ${this.model.name}`): boolean {
    if (values === steps * this.C) return true;
    this.fail(new AurisError('INFERENCE_FAILED', `${what} returned ${values} values for ${steps} steps x ${this.C} classes`));
    return false;
  }

  protected fail(e: Error): void {
    if (this.failed) return;
    this.failed = true;
    this.onError(e);
  }
}

/** A runner of early (provisional) answers: it takes features until end(), after which no call starts. */
export abstract class EarlyRunner extends LiveRunner {
  /** Appends `steps` steps of features ([steps*4][64], copied) and starts what became due. */
  push(features: Float32Array, steps: number): void {
    if (!this.ended && this.append(features, steps)) this.pump();
  }

  /** No more input: no more provisional calls (the finals follow at once). */
  end(): void {
    this.ended = true;
  }
}
