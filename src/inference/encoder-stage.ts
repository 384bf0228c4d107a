/**
 * The encoder stage of one channel: cuts the 16 kHz samples into fixed windows on the step grid
 * (window k = steps [kH, kH + W); hop H = W unless the schedule overlaps them), decides from the step levels alone which windows the
 * pretrained encoder runs on, runs those on the inference pool and reports every window's
 * outcome in order. The decision uses only the window's own steps, so a live stream (pushed
 * step by step) and a file job (pushed in large chunks) embed exactly the same windows.
 *
 * Why windows and not every step: a speaker encoder costs ~100x the per-step networks per
 * second of audio; a speaker's voice does not change inside a run of voiced windows, so the
 * encoder runs on one window in `every` of a run and the others reuse its result ('carry').
 */
import { AurisError } from '../errors';
import { STEP_SAMPLES, type ViewSchedule } from './views';

export type WindowOutcome =
  /**
   * The encoders ran on this window (one embedding each, in the views' order; a stage shared by
   * several schedules may leave out an encoder no schedule needs at this position). `run`: the
   * window's position in its run of voiced windows.
   */
  | { window: number; kind: 'embedded'; embeddings: (Float32Array | undefined)[]; run: number }
  /** Voiced, but the schedule skipped it: the run's last embedding holds. */
  | { window: number; kind: 'carry'; run: number }
  /** Too few voiced steps (or no samples): no embedding, and the run ends. */
  | { window: number; kind: 'none' }
  /**
   * Too few voiced steps for the schedule but at least the stage's `sparseMinVoicedSteps` (a live
   * stream's speaker map: mostly a turn's first and last windows): embedded all the same, to be
   * scored, not assigned (live-map.ts); the run ends as for 'none'.
   */
  | { window: number; kind: 'sparse'; embeddings: (Float32Array | undefined)[] };

export interface EncoderStageOptions {
  schedule: ViewSchedule;
  /** Runs the encoders on one window's samples (ownership passes; `run`: its position in the run) -> their embeddings. */
  embed(pcm: Float32Array, run: number): Promise<(Float32Array | undefined)[]>;
  /** Every window's outcome, in window order; a promise returned holds back the next outcome until it settles. */
  onWindow(outcome: WindowOutcome): void | Promise<void>;
  /** Windows with at least this many voiced steps, but fewer than the schedule's, are embedded as 'sparse' (default: none are). */
  sparseMinVoicedSteps?: number;
}

export class EncoderStage {
  private readonly schedule: ViewSchedule;
  private readonly W: number;
  private readonly H: number;
  /** The last W steps' samples and levels, circular by step (slot = step % W). */
  private readonly ring: Float32Array;
  private readonly ringLevels: Float32Array;
  private readonly ringHasSamples: Uint8Array;
  /** Steps received. */
  private steps = 0;
  /** Next window to close (window k covers steps [kH, kH + W)). */
  private window = 0;
  /** Position in the current run of voiced windows. */
  private run = 0;
  private ended = false;
  private closed = false;
  private tail: Promise<void> = Promise.resolve();
  private failure: Error | undefined;
  private _calls = 0;
  private pending = 0;

  constructor(private readonly options: EncoderStageOptions) {
    this.schedule = options.schedule;
    this.W = options.schedule.windowSteps;
    this.H = options.schedule.hopSteps ?? this.W;
    this.ring = new Float32Array(this.W * STEP_SAMPLES);
    this.ringLevels = new Float32Array(this.W);
    this.ringHasSamples = new Uint8Array(this.W);
  }

  /** Encoder calls made so far. */
  get calls(): number {
    return this._calls;
  }

  /** True once end() was called and every window's outcome was reported. */
  get done(): boolean {
    return this.ended && this.pending === 0;
  }

  /**
   * Appends `steps` steps: their levels (dBFS) and samples (STEP_SAMPLES each; undefined = none,
   * e.g. synthetic test features). Resolves once every window started so far was reported.
   */
  push(levels: Float32Array, pcm: Float32Array | undefined, steps: number): Promise<void> {
    if (this.ended) return Promise.reject(new AurisError('CLOSED', 'push() after end()'));
    if (this.failure) return Promise.reject(this.failure);
    if (pcm && pcm.length < steps * STEP_SAMPLES) {
      return Promise.reject(new AurisError('INVALID_ARGUMENT', `expected ${steps * STEP_SAMPLES} samples for ${steps} steps, got ${pcm.length}`));
    }
    for (let i = 0; i < steps; i++) {
      const slot = this.steps % this.W;
      if (pcm) this.ring.set(pcm.subarray(i * STEP_SAMPLES, (i + 1) * STEP_SAMPLES), slot * STEP_SAMPLES);
      this.ringHasSamples[slot] = pcm ? 1 : 0;
      this.ringLevels[slot] = levels[i]!;
      this.steps++;
      // the window starting W steps back is now complete
      if (this.steps >= this.W && this.window * this.H === this.steps - this.W) this.closeWindow(this.W);
    }
    return this.tail;
  }

  /** No more steps: the windows that started but reach past the end (zeros after the signal) are decided like the others. */
  end(): Promise<void> {
    if (!this.ended) {
      while (!this.failure && this.window * this.H < this.steps) this.closeWindow(this.steps - this.window * this.H);
      this.ended = true;
    }
    return this.failure ? Promise.reject(this.failure) : this.tail;
  }

  /** Drops whatever is in flight (a closed stream). */
  close(): void {
    this.closed = true;
    this.ended = true;
  }

  /** Decides the next window, whose first `have` steps (<= W) are the last ones received up to its end. */
  private closeWindow(have: number): void {
    const window = this.window++;
    const first = window * this.H;
    let voiced = 0;
    let hasSamples = true;
    for (let s = first; s < first + have; s++) {
      const slot = s % this.W;
      if (this.ringLevels[slot]! >= this.schedule.gateDb) voiced++;
      if (!this.ringHasSamples[slot]) hasSamples = false;
    }
    const embed = hasSamples && voiced >= this.schedule.minVoicedSteps;
    const sparse = !embed && hasSamples && voiced >= (this.options.sparseMinVoicedSteps ?? Infinity);
    let outcome: Promise<WindowOutcome>;
    if (!embed) {
      this.run = 0;
      outcome = sparse
        ? this.embed(first, have, 0).then((embeddings) => ({ window, kind: 'sparse', embeddings }))
        : Promise.resolve({ window, kind: 'none' });
    } else if (this.run % this.schedule.every !== 0) {
      outcome = Promise.resolve({ window, kind: 'carry', run: this.run++ });
    } else {
      const run = this.run++;
      outcome = this.embed(first, have, run).then((embeddings) => ({ window, kind: 'embedded', embeddings, run }));
    }
    outcome.catch(() => undefined); // surfaced through the tail below
    this.pending++;
    this.tail = this.tail.then(async () => {
      try {
        const o = await outcome;
        if (!this.closed) await this.options.onWindow(o);
        this.pending--; // done: reported and taken in (a speaker map may cluster first)
      } catch (e) {
        this.failure ??= e as Error;
        throw e;
      }
    });
    this.tail.catch(() => undefined);
  }

  /** Runs the encoders on the window starting at step `first`, its first `have` steps received (zeros after them). */
  private embed(first: number, have: number, run: number): Promise<(Float32Array | undefined)[]> {
    this._calls++;
    const pcm = new Float32Array(this.W * STEP_SAMPLES);
    for (let i = 0; i < have; i++) {
      const slot = (first + i) % this.W;
      pcm.set(this.ring.subarray(slot * STEP_SAMPLES, (slot + 1) * STEP_SAMPLES), i * STEP_SAMPLES);
    }
    return this.options.embed(pcm, run);
  }
}
