/**
 * The encoder stage of one channel: cuts the 16 kHz samples into fixed windows on the step grid
 * (window k = steps [kH, kH + W); hop H = W unless the schedule overlaps them), decides which windows the
 * pretrained encoder runs on, runs those on the inference pool and reports every window's
 * outcome in order. The decision uses only the window's own steps (their levels and, with a
 * speech gate, the speech model's decisions on its first steps), so a live stream (pushed step by
 * step) and a file job (pushed in large chunks) embed exactly the same windows.
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
  /**
   * The levels and speech flags of the steps from the next window to decide on, circular by step
   * (slot = step % capacity): W steps unless a speech gate holds windows back until the speech
   * model's outputs for their first steps arrive; then it grows as needed.
   */
  private capacity: number;
  private levels: Float32Array;
  private hasSamples: Uint8Array;
  private speech: Uint8Array;
  /**
   * The samples pushed (the caller's arrays, not copies: a window held back by a speech gate keeps
   * its chunks alive, nothing more), from the one holding the next window's first step on.
   */
  private segments: { start: number; steps: number; pcm: Float32Array }[] = [];
  /** Steps received. */
  private steps = 0;
  /** Steps whose speech flag is known (pushSpeech). */
  private speechSteps = 0;
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
  /** end()'s callers waiting for the windows a speech gate still holds back. */
  private waiters: (() => void)[] = [];

  constructor(private readonly options: EncoderStageOptions) {
    this.schedule = options.schedule;
    this.W = options.schedule.windowSteps;
    this.H = options.schedule.hopSteps ?? this.W;
    this.capacity = this.W;
    this.levels = new Float32Array(this.W);
    this.hasSamples = new Uint8Array(this.W);
    this.speech = new Uint8Array(this.W);
  }

  /** Encoder calls made so far. */
  get calls(): number {
    return this._calls;
  }

  /** True when the schedule decides windows on the speech model's outputs too (pushSpeech). */
  get speechGated(): boolean {
    return this.schedule.speechGate !== undefined;
  }

  /** True once end() was called and every window's outcome was reported. */
  get done(): boolean {
    return this.ended && this.allClosed() && this.pending === 0;
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
    if (pcm && steps > 0) this.segments.push({ start: this.steps, steps, pcm });
    for (let i = 0; i < steps; i++) {
      this.reserve(this.steps + 1);
      const slot = this.steps % this.capacity;
      this.hasSamples[slot] = pcm ? 1 : 0;
      this.levels[slot] = levels[i]!;
      this.steps++;
      this.closeReady(); // the window starting W steps back may be complete now
    }
    return this.tail;
  }

  /**
   * Resolves once every window decided so far was reported. With a speech gate, push() resolves
   * before the windows whose flags are still to come are even decided: a file job waits on this
   * after the speech model's push, so its reads stay as far ahead of the encoder as without a gate.
   */
  settled(): Promise<void> {
    return this.failure ? Promise.reject(this.failure) : this.tail;
  }

  /**
   * Appends the next `steps` steps' speech flags (1: the speech model hears speech; step order,
   * from step 0). Only a speech-gated schedule reads them; they may arrive before or after the steps.
   */
  pushSpeech(flags: Uint8Array, steps: number): void {
    if (this.closed || this.failure) return;
    for (let i = 0; i < steps; i++) {
      this.reserve(this.speechSteps + 1);
      this.speech[this.speechSteps % this.capacity] = flags[i]!;
      this.speechSteps++;
    }
    this.closeReady();
  }

  /**
   * No more steps: the windows that started but reach past the end (zeros after the signal) are
   * decided like the others (a speech gate still waits for their speech flags).
   */
  end(): Promise<void> {
    this.ended = true;
    this.closeReady();
    if (this.failure) return Promise.reject(this.failure);
    if (this.allClosed()) return this.tail;
    return new Promise<void>((resolve) => this.waiters.push(resolve)).then(() => (this.failure ? Promise.reject(this.failure) : this.tail));
  }

  /** Drops whatever is in flight (a closed stream). */
  close(): void {
    this.closed = true;
    this.ended = true;
    this.wake();
  }

  private allClosed(): boolean {
    return this.window * this.H >= this.steps;
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    w.forEach((resolve) => resolve());
  }

  /** Decides every window whose steps (all W, or up to the end) and, with a speech gate, whose gated steps' flags are in. */
  private closeReady(): void {
    const gate = this.schedule.speechGate;
    while (!this.failure && !this.closed && !this.allClosed()) {
      const first = this.window * this.H;
      const have = Math.min(this.W, this.steps - first);
      if (have < this.W && !this.ended) break;
      if (gate && this.speechSteps < first + Math.min(gate.steps, have)) break;
      this.closeWindow(first, have);
    }
    if (this.ended && (this.allClosed() || this.failure || this.closed)) this.wake();
  }

  /** Room for the steps from the next window's first up to `upTo` (exclusive): the buffers grow, keeping those steps. */
  private reserve(upTo: number): void {
    const from = this.window * this.H;
    if (upTo - from <= this.capacity) return;
    let cap = this.capacity * 2;
    while (upTo - from > cap) cap *= 2;
    const levels = new Float32Array(cap);
    const hasSamples = new Uint8Array(cap);
    const speech = new Uint8Array(cap);
    for (let s = from; s < Math.max(this.steps, this.speechSteps); s++) {
      const a = s % this.capacity;
      const b = s % cap;
      levels[b] = this.levels[a]!;
      hasSamples[b] = this.hasSamples[a]!;
      speech[b] = this.speech[a]!;
    }
    this.capacity = cap;
    this.levels = levels;
    this.hasSamples = hasSamples;
    this.speech = speech;
  }

  /** Decides the window starting at step `first`, whose first `have` steps (<= W) are received. */
  private closeWindow(first: number, have: number): void {
    const window = this.window++;
    const gate = this.schedule.speechGate;
    let voiced = 0;
    let speech = 0;
    let nonSpeech = 0;
    let hasSamples = true;
    for (let s = first; s < first + have; s++) {
      const slot = s % this.capacity;
      const loud = this.levels[slot]! >= this.schedule.gateDb;
      if (loud) voiced++;
      if (!this.hasSamples[slot]) hasSamples = false;
      if (gate && s < first + gate.steps) {
        speech += this.speech[slot]!;
        if (loud && !this.speech[slot]) nonSpeech++;
      }
    }
    // a speech gate: a window whose first steps the speech model mostly calls music or noise is
    // not embedded, and ends the run (a voice after music then gets its own window, not the music's)
    const heard = !gate || (speech >= gate.minSpeechSteps && nonSpeech <= (gate.maxNonSpeechSteps ?? Infinity));
    const embed = heard && hasSamples && voiced >= this.schedule.minVoicedSteps;
    const sparse = !embed && heard && hasSamples && voiced >= (this.options.sparseMinVoicedSteps ?? Infinity);
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
    this.dropSegments();
    this.pending++;
    this.tail = this.tail.then(async () => {
      try {
        const o = await outcome;
        if (!this.closed) await this.options.onWindow(o);
        this.pending--; // done: reported and taken in (a speaker map may cluster first)
      } catch (e) {
        this.failure ??= e as Error;
        this.wake();
        throw e;
      }
    });
    this.tail.catch(() => undefined);
  }

  /** Runs the encoders on the window starting at step `first`, its first `have` steps received (zeros after them). */
  private embed(first: number, have: number, run: number): Promise<(Float32Array | undefined)[]> {
    this._calls++;
    const pcm = new Float32Array(this.W * STEP_SAMPLES);
    for (const seg of this.segments) {
      const a = Math.max(first, seg.start);
      const b = Math.min(first + have, seg.start + seg.steps);
      if (a < b) pcm.set(seg.pcm.subarray((a - seg.start) * STEP_SAMPLES, (b - seg.start) * STEP_SAMPLES), (a - first) * STEP_SAMPLES);
    }
    return this.options.embed(pcm, run);
  }

  /** Lets go of the samples before the next window's first step. */
  private dropSegments(): void {
    const keepFrom = this.window * this.H;
    while (this.segments.length > 0 && this.segments[0]!.start + this.segments[0]!.steps <= keepFrom) this.segments.shift();
  }
}
