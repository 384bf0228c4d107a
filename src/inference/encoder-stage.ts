/**
 * The encoder stage of one channel: cuts the 16 kHz samples into fixed windows on the step grid
 * (window k = steps [kW, (k+1)W)), decides from the step levels alone which windows the
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
  /** The encoders ran on this window (one embedding each, in the views' order). */
  | { window: number; kind: 'embedded'; embeddings: Float32Array[] }
  /** Voiced, but the schedule skipped it: the run's last embedding holds. */
  | { window: number; kind: 'carry' }
  /** Too few voiced steps (or no samples): no embedding, and the run ends. */
  | { window: number; kind: 'none' };

export interface EncoderStageOptions {
  schedule: ViewSchedule;
  /** Runs the encoders on one window's samples (ownership passes) -> their embeddings. */
  embed(pcm: Float32Array): Promise<Float32Array[]>;
  /** Every window's outcome, in window order. */
  onWindow(outcome: WindowOutcome): void;
}

export class EncoderStage {
  private readonly schedule: ViewSchedule;
  private readonly windowSamples: number;
  private pcm: Float32Array;
  /** Steps of the current window received so far. */
  private filled = 0;
  private voiced = 0;
  private hasSamples = true;
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
    this.windowSamples = options.schedule.windowSteps * STEP_SAMPLES;
    this.pcm = new Float32Array(this.windowSamples);
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
      if (pcm) this.pcm.set(pcm.subarray(i * STEP_SAMPLES, (i + 1) * STEP_SAMPLES), this.filled * STEP_SAMPLES);
      else this.hasSamples = false;
      if (levels[i]! >= this.schedule.gateDb) this.voiced++;
      if (++this.filled === this.schedule.windowSteps) this.closeWindow();
    }
    return this.tail;
  }

  /** No more steps: the last, partial window (zeros after the signal) is decided like the others. */
  end(): Promise<void> {
    if (!this.ended) {
      if (this.filled > 0 && !this.failure) {
        this.pcm.fill(0, this.filled * STEP_SAMPLES);
        this.closeWindow();
      }
      this.ended = true;
    }
    return this.failure ? Promise.reject(this.failure) : this.tail;
  }

  /** Drops whatever is in flight (a closed stream). */
  close(): void {
    this.closed = true;
    this.ended = true;
  }

  private closeWindow(): void {
    const window = this.window++;
    const embed = this.hasSamples && this.voiced >= this.schedule.minVoicedSteps;
    let outcome: Promise<WindowOutcome>;
    if (!embed) {
      this.run = 0;
      outcome = Promise.resolve({ window, kind: 'none' });
    } else if (this.run++ % this.schedule.every !== 0) {
      outcome = Promise.resolve({ window, kind: 'carry' });
    } else {
      this._calls++;
      const pcm = this.pcm;
      this.pcm = new Float32Array(this.windowSamples);
      outcome = this.options.embed(pcm).then((embeddings) => ({ window, kind: 'embedded', embeddings }));
      outcome.catch(() => undefined); // surfaced through the tail below
    }
    this.filled = 0;
    this.voiced = 0;
    this.hasSamples = true;
    this.pending++;
    this.tail = this.tail.then(async () => {
      let o: WindowOutcome;
      try {
        o = await outcome;
      } catch (e) {
        this.failure ??= e as Error;
        throw e;
      }
      this.pending--;
      if (!this.closed) this.options.onWindow(o);
    });
    this.tail.catch(() => undefined);
  }
}
