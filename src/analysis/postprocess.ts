/**
 * Post-processing: per-64-ms model outputs -> SPEC.md's channel result
 * (time_series, summary, transitions). Pure functions, no I/O.
 * Every rule is documented in docs/results.md; keep the two in step.
 */
import { AurisError } from '../errors';
import { STEP_MS } from './options';
import {
  ModelPolicy,
  NO_SPEECH_LABEL,
  PolicyOverrides,
  SILENCE_LABEL,
  SPEECH_LABEL,
  SPEECH_MODEL,
  UNKNOWN_LABEL,
  policyFor,
} from './policies';
import { SegmentMean } from './segment';

/** Decimals kept for confidences, raw probabilities and summary fractions. */
export const DECIMALS = 4;
const SCALE = 10 ** DECIMALS;

export interface ModelResult {
  result: string;
  confidence: number;
}

export interface TimeStepResult {
  /** Start of the step, ms (integer). */
  timestamp: number;
  results: Record<string, ModelResult>;
  raw?: Record<string, Record<string, number>>;
}

export interface Segment {
  timestamp_start: number;
  timestamp_end: number;
  result: string;
  confidence: number;
}

export interface ChannelResult {
  time_series: TimeStepResult[];
  summary?: Record<string, Record<string, number>>;
  transitions?: Record<string, Segment[]>;
}

export interface ResultsEnvelope {
  job_id: string;
  result: { channels: Record<string, ChannelResult> };
}

/** Model outputs of one channel, at the model's 64 ms step resolution. */
export interface ChannelSteps {
  /** Number of 64 ms steps (ceil(samples / 1024)). */
  steps: number;
  /**
   * Real duration of the channel, ms. Only the last step can be partial, so this lies in
   * ((steps-1)*64, steps*64]; values outside are clamped into that range.
   * Default: steps * 64.
   */
  durationMs?: number;
  /** Level of each step in dBFS (docs/features.md), length `steps`. */
  levels: ArrayLike<number>;
  /**
   * Per-step class probabilities of every model that ran (row-major [steps][C],
   * class order = that model's raw keys). Must include `speech` when a speech-gated
   * model (arousal, gender) is requested.
   */
  probs: Readonly<Record<string, ArrayLike<number>>>;
}

export interface PostProcessOptions {
  /** Models to report, in output order. */
  models: readonly string[];
  /** Raw keys (manifest order) of every model in `models` and of `speech` when it gates. */
  rawKeys: Readonly<Record<string, readonly string[]>>;
  outputPeriodMs: number;
  volumeThreshold: number;
  includeSummary?: boolean;
  includeTransitions?: boolean;
  includeRaw?: boolean;
  /** Overrides GENDER_UNKNOWN_THRESHOLD. */
  genderUnknownThreshold?: number;
  /** false: gender decided step by step, without the segment mean (segment.ts). Default true. */
  segmentSmoothing?: boolean;
  /**
   * Raw values show only the first n raw keys of a model when this gives n for the step's averaged
   * probabilities (a live speaker map: the speakers its windows knew).
   */
  shownRawKeys?: (model: string, probs: ArrayLike<number>) => number | undefined;
  /**
   * Per model, the temperature its confidences are shown at (models/<name>/calibration.json, read by the registry):
   * the confidence of a label is its probability in softmax(log p / T) instead of p itself. Absent: T = 1.
   */
  confidenceTemperature?: Readonly<Record<string, number>>;
}

/** Rounds to DECIMALS places (half away from zero, robust to binary representation of x.xxxx5). */
export function round(x: number): number {
  return Math.round((x + Number.EPSILON * Math.sign(x)) * SCALE) / SCALE;
}

/** One output step before rounding: label, unrounded confidence, averaged probabilities. */
export interface StepDecision {
  result: string;
  confidence: number;
}

/**
 * Aggregates sub-steps into output steps and decides labels; shared by file processing
 * and (later) streaming, which feeds one output step at a time.
 */
export class StepDecider {
  readonly policies: ModelPolicy[];
  private readonly speechIndex: number;
  private readonly needSpeech: boolean;
  private readonly _inputModels: readonly string[];
  /** Per reported model: its running segment mean, for policies with segmentSmoothing. */
  private readonly segments: (SegmentMean | null)[];
  /** Per reported model: the temperature of its confidences (1: as the network gives them). */
  private readonly temperatures: number[];

  constructor(readonly options: PostProcessOptions) {
    if (options.models.length === 0) throw new AurisError('INVALID_ARGUMENT', 'no models to report');
    this.policies = options.models.map((name) => {
      const keys = options.rawKeys[name];
      if (!keys || keys.length === 0) throw new AurisError('INVALID_ARGUMENT', `no raw keys for model ${name}`);
      const overrides: PolicyOverrides = {};
      if (options.genderUnknownThreshold !== undefined) overrides.genderUnknownThreshold = options.genderUnknownThreshold;
      if (options.segmentSmoothing !== undefined) overrides.segmentSmoothing = options.segmentSmoothing;
      return policyFor(name, keys, overrides);
    });
    this.segments = this.policies.map((p) => (p.segmentSmoothing ? new SegmentMean(p.rawKeys.length) : null));
    this.temperatures = this.policies.map((p) => options.confidenceTemperature?.[p.name] ?? 1);
    this.needSpeech = this.policies.some((p) => p.speechGated);
    const names = this.policies.map((p) => p.name);
    if (this.needSpeech && !names.includes(SPEECH_MODEL)) names.push(SPEECH_MODEL);
    this._inputModels = names;
    const speechKeys = options.rawKeys[SPEECH_MODEL];
    if (this.needSpeech) {
      if (!speechKeys) throw new AurisError('INVALID_ARGUMENT', 'speech-gated models need the speech model raw keys');
      this.speechIndex = speechKeys.indexOf(SPEECH_LABEL);
      if (this.speechIndex < 0) throw new AurisError('INVALID_ARGUMENT', `speech model has no "${SPEECH_LABEL}" class`);
    } else {
      this.speechIndex = -1;
    }
  }

  /**
   * Averages 64 ms steps [from, to) into one output step: probabilities of every input model
   * and the level, each step weighted by its real duration `durationOf(s)` (ms).
   */
  aggregate(
    levels: ArrayLike<number>,
    probs: Readonly<Record<string, ArrayLike<number>>>,
    from: number,
    to: number,
    durationOf: (s: number) => number = () => STEP_MS,
  ): { levelDb: number; avg: Record<string, Float64Array>; spanMs: number } {
    const avg: Record<string, Float64Array> = {};
    let span = 0;
    for (let s = from; s < to; s++) span += durationOf(s);
    for (const name of this.inputModels) {
      const C = this.options.rawKeys[name]!.length;
      const p = probs[name];
      if (!p) throw new AurisError('INVALID_ARGUMENT', `missing probabilities for model ${name}`);
      const a = new Float64Array(C);
      for (let s = from; s < to; s++) {
        const w = durationOf(s);
        for (let j = 0; j < C; j++) a[j]! += w * p[s * C + j]!;
      }
      for (let j = 0; j < C; j++) a[j]! /= span;
      avg[name] = a;
    }
    return { levelDb: stepLevelDb(levels, from, to, durationOf), avg, spanMs: span };
  }

  /**
   * One time-step result (SPEC shape, rounded) plus the unrounded decisions, from an output
   * step's level and averaged probabilities (see aggregate()). Streaming uses this per step.
   */
  timeStep(
    timestampMs: number,
    levelDb: number,
    avgProbs: Readonly<Record<string, ArrayLike<number>>>,
    includeRaw: boolean,
  ): { step: TimeStepResult; decisions: StepDecision[] } {
    const decisions = this.decide(levelDb, avgProbs, timestampMs);
    const results: Record<string, ModelResult> = {};
    decisions.forEach((dec, m) => (results[this.policies[m]!.name] = { result: dec.result, confidence: round(dec.confidence) }));
    const step: TimeStepResult = { timestamp: timestampMs, results };
    if (includeRaw) {
      const raw: Record<string, Record<string, number>> = {};
      for (const policy of this.policies) {
        const a = avgProbs[policy.name]!;
        const r: Record<string, number> = {};
        const shown = this.options.shownRawKeys?.(policy.name, a) ?? policy.rawKeys.length;
        policy.rawKeys.forEach((key, j) => {
          if (j < Math.max(1, shown)) r[key] = round(a[j]!);
        });
        raw[policy.name] = r;
      }
      step.raw = raw;
    }
    return { step, decisions };
  }

  /** Models whose probabilities decide() needs (reported models plus speech when gating). */
  get inputModels(): readonly string[] {
    return this._inputModels;
  }

  /**
   * Decides one output step.
   * @param levelDb  level of the output step in dBFS (see stepLevelDb)
   * @param avgProbs averaged probabilities per model name (class order = raw keys)
   * @param timestampMs start of the output step: steps must come in time order (segment smoothing)
   * @returns one decision per reported model (same order as options.models)
   */
  decide(levelDb: number, avgProbs: Readonly<Record<string, ArrayLike<number>>>, timestampMs: number): StepDecision[] {
    const silent = levelDb < this.options.volumeThreshold;
    let isSpeech = true;
    let speechProb = 1;
    if (this.needSpeech && !silent) {
      const sp = avgProbs[SPEECH_MODEL];
      if (!sp) throw new AurisError('INVALID_ARGUMENT', 'missing speech model probabilities');
      isSpeech = argmax(sp) === this.speechIndex;
      speechProb = sp[this.speechIndex]!;
    }
    return this.policies.map((policy, m): StepDecision => {
      if (silent) return { result: SILENCE_LABEL, confidence: 1 };
      const segment = this.segments[m];
      if (policy.speechGated && !isSpeech) {
        segment?.end();
        return { result: NO_SPEECH_LABEL, confidence: 1 - speechProb };
      }
      const stepProbs = avgProbs[policy.name];
      if (!stepProbs) throw new AurisError('INVALID_ARGUMENT', `missing probabilities for model ${policy.name}`);
      const p = segment ? segment.add(stepProbs, timestampMs, timestampMs + this.options.outputPeriodMs) : stepProbs;
      const k = argmax(p);
      const t = this.temperatures[m]!;
      const conf = t === 1 ? p[k]! : temperedProbability(p, k, t);
      // Compared as shown (rounded): a displayed 0.65 is not below a 0.65 threshold.
      if (policy.unknownThreshold !== undefined && round(conf) < policy.unknownThreshold) {
        return { result: UNKNOWN_LABEL, confidence: conf };
      }
      return { result: policy.rawKeys[k]!, confidence: conf };
    });
  }
}

/**
 * Class k's probability in softmax(log p / t): the confidence of a model whose probabilities are too sure on
 * recordings it never heard (t > 1 pulls them towards uniform). The argmax is the same as p's, so labels do not
 * change. Same as training/validate/calibration.py tempered() (probabilities floored at 1e-12).
 */
export function temperedProbability(p: ArrayLike<number>, k: number, t: number): number {
  // called for every shown step of a tempered model: no allocation, the logs taken again in the second pass
  const z = (j: number): number => Math.log(Math.max(p[j]!, 1e-12)) / t;
  let max = -Infinity;
  for (let j = 0; j < p.length; j++) max = Math.max(max, z(j));
  let sum = 0;
  for (let j = 0; j < p.length; j++) sum += Math.exp(z(j) - max);
  return Math.exp(z(k) - max) / sum;
}

/** Index of the largest value; ties go to the first (raw-key order). */
export function argmax(p: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < p.length; i++) if (p[i]! > p[best]!) best = i;
  return best;
}

/**
 * Level of an output step: 10*log10 of the mean power of its sub-steps, each weighted by
 * its real duration (power = 10^(level/10)). Matches the sample-level mean power when the
 * sub-step levels are themselves sample means.
 */
export function stepLevelDb(levels: ArrayLike<number>, from: number, to: number, durations: (s: number) => number): number {
  let pw = 0;
  let d = 0;
  for (let s = from; s < to; s++) {
    const w = durations(s);
    pw += w * 10 ** (levels[s]! / 10);
    d += w;
  }
  return 10 * Math.log10(d > 0 ? pw / d : 1e-12);
}

/** Clamps a duration into ((steps-1)*64, steps*64]. */
export function effectiveDurationMs(steps: number, durationMs?: number): number {
  const full = steps * STEP_MS;
  if (durationMs === undefined || !Number.isFinite(durationMs)) return full;
  const min = (steps - 1) * STEP_MS;
  if (durationMs > full) return full;
  // Slightly short (resampling rounding): keep one 16 kHz sample of the last step.
  // Far off (a header estimate, e.g. some MP3s): trust the decoded step count instead.
  if (durationMs <= min) return durationMs > min - STEP_MS ? min + 1 / 16 : full;
  return durationMs;
}

/** End-of-audio timestamp written in transitions: integer ms, after the last step start. */
export function endTimestampMs(durationMs: number, lastStepStartMs: number): number {
  return Math.max(lastStepStartMs + 1, Math.round(durationMs));
}

/**
 * Largest-remainder rounding of fractions (summing to 1) to DECIMALS places, so the
 * rounded values sum to exactly 1 in units of 10^-DECIMALS. Ties: earlier key first.
 */
export function roundFractions(values: readonly number[]): number[] {
  const total = values.reduce((a, b) => a + b, 0);
  if (!(total > 0)) return values.map(() => 0);
  const exact = values.map((v) => (v / total) * SCALE);
  const floors = exact.map((x) => Math.floor(x + 1e-9));
  let left = SCALE - floors.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => ({ i, r: x - floors[i]! })).sort((a, b) => b.r - a.r || a.i - b.i);
  for (let j = 0; left > 0 && j < order.length; j++, left--) floors[order[j]!.i]! += 1;
  return floors.map((u) => u / SCALE);
}

/**
 * Builds one channel's result from its per-64-ms model outputs.
 * Output step k covers 64-ms steps [k*p, min((k+1)*p, steps)), p = outputPeriodMs/64;
 * its timestamp is k*outputPeriodMs; the last one may be partial.
 */
export function buildChannelResult(input: ChannelSteps, options: PostProcessOptions): ChannelResult {
  const { steps } = input;
  if (!Number.isInteger(steps) || steps <= 0) throw new AurisError('INVALID_ARGUMENT', 'channel has no audio steps');
  if (!Number.isInteger(options.outputPeriodMs) || options.outputPeriodMs <= 0 || options.outputPeriodMs % STEP_MS !== 0) {
    throw new AurisError('INVALID_ARGUMENT', `output_period must be a positive multiple of ${STEP_MS} ms`);
  }
  if (input.levels.length < steps) throw new AurisError('INVALID_ARGUMENT', 'levels shorter than steps');
  const decider = new StepDecider(options);
  for (const name of decider.inputModels) {
    const keys = options.rawKeys[name]!;
    const p = input.probs[name];
    if (!p) throw new AurisError('INVALID_ARGUMENT', `missing probabilities for model ${name}`);
    if (p.length < steps * keys.length) throw new AurisError('INVALID_ARGUMENT', `probabilities of ${name} shorter than steps`);
  }

  const durationMs = effectiveDurationMs(steps, input.durationMs);
  const lastMs = durationMs - (steps - 1) * STEP_MS;
  const dur = (s: number): number => (s === steps - 1 ? lastMs : STEP_MS);
  const per = options.outputPeriodMs / STEP_MS;
  const outSteps = Math.ceil(steps / per);
  const policies = decider.policies;
  const includeRaw = options.includeRaw === true;

  const timeSeries: TimeStepResult[] = new Array(outSteps);
  // Per model: per output step label + unrounded confidence + duration, for summary/transitions.
  const labels: string[][] = policies.map(() => new Array<string>(outSteps));
  const confs: Float64Array[] = policies.map(() => new Float64Array(outSteps));
  const spans = new Float64Array(outSteps);

  for (let k = 0; k < outSteps; k++) {
    const from = k * per;
    const agg = decider.aggregate(input.levels, input.probs, from, Math.min(steps, from + per), dur);
    spans[k] = agg.spanMs;
    const { step, decisions } = decider.timeStep(k * options.outputPeriodMs, agg.levelDb, agg.avg, includeRaw);
    decisions.forEach((dec, m) => {
      labels[m]![k] = dec.result;
      confs[m]![k] = dec.confidence;
    });
    timeSeries[k] = step;
  }

  const out: ChannelResult = { time_series: timeSeries };
  if (options.includeSummary) {
    const summary: Record<string, Record<string, number>> = {};
    policies.forEach((policy, m) => {
      const time = new Map<string, number>(policy.summaryClasses.map((c) => [c, 0]));
      for (let k = 0; k < outSteps; k++) {
        const cls = policy.summaryClassOf(labels[m]![k]!);
        if (!time.has(cls)) throw new Error(`internal: label ${cls} has no summary class in ${policy.name}`);
        time.set(cls, time.get(cls)! + spans[k]!);
      }
      const fr = roundFractions(policy.summaryClasses.map((c) => time.get(c)! / durationMs));
      const obj: Record<string, number> = {};
      policy.summaryClasses.forEach((c, i) => (obj[`${c}_fraction`] = fr[i]!));
      summary[policy.name] = obj;
    });
    out.summary = summary;
  }
  if (options.includeTransitions) {
    const transitions: Record<string, Segment[]> = {};
    const end = endTimestampMs(durationMs, (outSteps - 1) * options.outputPeriodMs);
    policies.forEach((policy, m) => {
      transitions[policy.name] = collapseSegments(
        labels[m]!,
        confs[m]!,
        spans,
        options.outputPeriodMs,
        end,
      );
    });
    out.transitions = transitions;
  }
  return out;
}

/**
 * Collapses consecutive equal labels into segments. Segment k starts at its first step's
 * timestamp and ends where the next begins (the last ends at `endMs`); its confidence is
 * the duration-weighted mean of its steps' (unrounded) confidences.
 */
export function collapseSegments(
  labels: readonly string[],
  confidences: ArrayLike<number>,
  spansMs: ArrayLike<number>,
  periodMs: number,
  endMs: number,
): Segment[] {
  const b = new SegmentBuilder(periodMs);
  for (let k = 0; k < labels.length; k++) b.add(labels[k]!, confidences[k]!, spansMs[k]!);
  return b.finish(endMs);
}

/** collapseSegments step by step (live streams): add each output step's label as it is decided. */
export class SegmentBuilder {
  private readonly segments: Segment[] = [];
  private label: string | undefined;
  private start = 0;
  private steps = 0;
  private weightedConfidence = 0;
  private weight = 0;

  constructor(private readonly periodMs: number) {}

  add(label: string, confidence: number, spanMs: number): void {
    if (this.label !== undefined && label !== this.label) this.close(this.steps * this.periodMs);
    if (this.label === undefined) {
      this.label = label;
      this.start = this.steps;
    }
    this.weightedConfidence += spanMs * confidence;
    this.weight += spanMs;
    this.steps++;
  }

  /** The segments, the last one ending at `endMs`. */
  finish(endMs: number): Segment[] {
    if (this.label !== undefined) this.close(endMs);
    return this.segments;
  }

  private close(endMs: number): void {
    const w = this.weight;
    this.segments.push({ timestamp_start: this.start * this.periodMs, timestamp_end: endMs, result: this.label!, confidence: round(w > 0 ? this.weightedConfidence / w : 0) });
    this.label = undefined;
    this.weightedConfidence = 0;
    this.weight = 0;
  }
}

/** Wraps channel results into SPEC.md's results envelope; keys are channel indices as strings. */
export function buildEnvelope(jobId: string, channels: ReadonlyMap<number, ChannelResult> | Readonly<Record<string, ChannelResult>>): ResultsEnvelope {
  const out: Record<string, ChannelResult> = {};
  const entries: [string, ChannelResult][] =
    channels instanceof Map
      ? [...(channels as ReadonlyMap<number, ChannelResult>).entries()].map(([k, v]) => [String(k), v])
      : Object.entries(channels as Record<string, ChannelResult>);
  entries.sort((a, b) => Number(a[0]) - Number(b[0]));
  for (const [k, v] of entries) out[k] = v;
  return { job_id: jobId, result: { channels: out } };
}
