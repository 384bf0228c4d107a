/**
 * Provisional results of one live stream (docs/streaming.md "Provisional results"): every network
 * answers each output step again before its final, with its own lookahead and cadence: from its
 * causal head where the model ships one (speech at once, every step; arousal a call every 4 steps; gender 128 ms
 * ahead, a call every 2 steps; src/inference/provisional-head-runner.ts), else over a window with less left context
 * than the finals' (provisionalPlan: emotions a call every 4 steps; src/inference/provisional-runner.ts).
 *
 * Models that answer after the same delay form a tier; tiers are ordered by how soon they answer,
 * speech's first (the others' labels need it). A tier's
 * message for an output step carries the requested models of that tier and of every faster
 * one, so each message of a step holds all that the ones before it held: a client that keeps
 * the latest message per timestamp always has every model answered so far. With speech and
 * gender: `{speech}` a few ms after the step's audio, then `{speech, gender}`, then the final.
 * A tier with no requested model of its own sends nothing (gender alone: speech only gates it).
 *
 * The speaker map (`speakers`) has no network: its provisional answer for a step is the live map's
 * latest window ending by the step plus provisional_lookahead_steps (src/speakers/live-map.ts),
 * pushed here by the stream. It comes in the last tier, with every other requested model: a
 * window's last step waits for the encoder, which should not hold back a faster model's answer.
 */
import { STEP_MS } from '../analysis/options';
import { policyFor } from '../analysis/policies';
import { StepDecider, stepLevelDb, type PostProcessOptions, type TimeStepResult } from '../analysis/postprocess';
import type { InferenceEngine } from '../inference/engine';
import { HeadRunner } from '../inference/provisional-head-runner';
import { ProvisionalRunner, provisionalPlan, type ProvisionalPlan } from '../inference/provisional-runner';
import type { ModelInfo } from '../inference/registry';
import { StepBuffer } from '../inference/step-buffer';

export interface ProvisionalResultsOptions {
  engine: InferenceEngine;
  /** The networks that run (requested ones and speech when it gates them). */
  networks: readonly ModelInfo[];
  /** The stream's post-processing (its `models` are the requested ones). */
  decider: PostProcessOptions;
  /** Steps per output step. */
  per: number;
  outputPeriodMs: number;
  /** The same plan for every model instead of each model's own (benchmarks, tests). */
  plan?: ProvisionalPlan;
  /** Step levels (dBFS) of the steps whose final is not sent yet. */
  levels: StepBuffer;
  /** Next output step whose final is not sent. */
  nextFinal: () => number;
  onStep: (step: TimeStepResult) => void;
  onError: (e: Error) => void;
  /** The speaker map's model, when it runs: its provisional vectors come through speakerOutput(). */
  speakerMap?: ModelInfo;
}

interface Tier {
  /** Networks whose outputs this tier's messages need (its own and every faster tier's). */
  inputs: string[];
  decider: StepDecider;
  /** Next output step to answer. */
  next: number;
  sent: number;
}

const SPEECH = 'speech';

/** The model's causal head, unless a plan is forced on every model (benchmarks, tests: the truncated windows). */
const headOf = (m: ModelInfo, forced: ProvisionalPlan | undefined): ModelInfo['provisionalHead'] => (forced ? undefined : m.provisionalHead);
/** How a head answers: after its lookahead, a call every `stride` steps (its head's, in whole output steps); no window, so no left context. */
const headPlan = (m: ModelInfo, per: number): ProvisionalPlan => {
  const h = m.provisionalHead!;
  return { lookahead: h.delaySteps, stride: Math.max(1, Math.ceil(h.stride / per)) * per, leftContext: 0 };
};

/** Steps a group's first step waits for its answer: the order of tiers. */
const delayOf = (p: ProvisionalPlan): number => p.lookahead + p.stride - 1;

export class ProvisionalResults {
  private readonly runners: Array<ProvisionalRunner | HeadRunner> = [];
  private readonly probs = new Map<string, StepBuffer>();
  private readonly tiers: Tier[] = [];
  private stopped = false;
  /** Labels output steps by level and the speech model alone (silence, speech, music, other): what a provisional answer could show. */
  private readonly gate: StepDecider | undefined;

  constructor(private readonly o: ProvisionalResultsOptions) {
    // models that answer after the same delay form a tier (each runs by its own plan: a head or a window)
    const byDelay = new Map<number, { delay: number; models: Array<{ m: ModelInfo; plan: ProvisionalPlan }> }>();
    for (const m of o.networks) {
      const plan = headOf(m, o.plan) ? headPlan(m, o.per) : provisionalPlan(m, o.per, o.plan);
      const g = byDelay.get(delayOf(plan)) ?? { delay: delayOf(plan), models: [] };
      g.models.push({ m, plan });
      byDelay.set(g.delay, g);
    }
    // speech's tier first: every other model's label needs speech's (no_speech), so no tier may answer before it,
    // even where its plan would be sooner (the speaker models at an output period of 256 ms or more)
    const order = (g: { delay: number; models: Array<{ m: ModelInfo }> }): number => (g.models.some(({ m }) => m.name === SPEECH) ? -1 : g.delay);
    const groups = [...byDelay.values()].sort((a, b) => order(a) - order(b));
    const speechKeys = o.decider.rawKeys[SPEECH];
    // with raw values every answer shows; without, a silent step shows none and a no_speech step no speaker model's
    if (!o.decider.includeRaw && speechKeys) {
      this.gate = new StepDecider({ models: [SPEECH], rawKeys: { [SPEECH]: speechKeys }, outputPeriodMs: o.outputPeriodMs, volumeThreshold: o.decider.volumeThreshold });
    }
    const requested = new Set(o.decider.models);
    const inputs: string[] = [];
    const shown: string[] = [];
    for (const { delay, models } of groups) {
      // the fastest tier's calls are urgent: its answers are the ones that need to arrive first (speech)
      const urgent = delay === groups[0]!.delay;
      for (const { m, plan } of models) this.startRunner(m, plan, urgent);
      inputs.push(...models.map(({ m }) => m.name));
      const own = models.map(({ m }) => m.name).filter((n) => requested.has(n));
      if (own.length === 0) continue;
      shown.push(...own);
      this.addTier(inputs, shown);
    }
    if (o.speakerMap) {
      this.probs.set(o.speakerMap.name, new StepBuffer(o.speakerMap.rawKeys.length));
      inputs.push(o.speakerMap.name);
      shown.push(o.speakerMap.name);
      this.addTier(inputs, shown);
    }
  }

  /** A tier needing the outputs of `inputs` and showing the requested models among `shown` (copied: both grow). */
  private addTier(inputs: readonly string[], shown: readonly string[]): void {
    this.tiers.push({
      inputs: [...inputs],
      // a provisional label stands alone: the gender segment mean is the finals' (it would need the finals' history)
      decider: new StepDecider({ ...this.o.decider, models: this.o.decider.models.filter((n) => shown.includes(n)), segmentSmoothing: false }),
      next: 0,
      sent: 0,
    });
  }

  /** The speaker map's provisional vectors of steps [start, start + steps), in order. */
  speakerOutput(start: number, probs: Float32Array): void {
    if (this.stopped) return;
    this.store(this.probs.get(this.o.speakerMap!.name)!, start, probs);
    this.emit();
  }

  /** Model calls made so far (all models). */
  get calls(): number {
    return this.runners.reduce((a, r) => a + r.calls, 0);
  }

  /** Provisional messages sent. */
  get sent(): number {
    return this.tiers.reduce((a, t) => a + t.sent, 0);
  }

  push(features: Float32Array, steps: number): void {
    for (const r of this.runners) r.push(features, steps);
  }

  /** No more audio: no more provisional results (the finals follow at once). */
  end(): void {
    this.stopped = true;
    for (const r of this.runners) r.end();
  }

  hold(on: boolean): void {
    for (const r of this.runners) r.hold(on);
  }

  close(): void {
    this.stopped = true;
    for (const r of this.runners) r.close();
  }

  /** The finals of output steps before `nextFinal` are sent: their provisional outputs are not needed any more. */
  finalsSent(nextFinal: number): void {
    for (const t of this.tiers) t.next = Math.max(t.next, nextFinal);
    this.trim();
  }

  private startRunner(m: ModelInfo, plan: ProvisionalPlan, urgent: boolean): void {
    const store = new StepBuffer(m.rawKeys.length);
    const gated = policyFor(m.name, m.rawKeys).speechGated;
    this.probs.set(m.name, store);
    const head = headOf(m, this.o.plan);
    if (head) {
      this.runners.push(
        new HeadRunner({
          model: m,
          stateSize: head.stateSize,
          delaySteps: head.delaySteps,
          stride: plan.stride,
          // the fastest tier's head (speech's: a call every step, the costliest head) ends its calls on every other
          // step while the workers are behind: about half its calls at little more cost each, so the finals keep up,
          // its answers up to a step later then. The slower tiers keep their cadence: a group later would take gender's
          // answers past 400 ms when 100 streams start at once (docs/streaming.md, session 51)
          ...(urgent ? { groupsPerCall: () => (this.o.engine.pool.behind ? 2 : 1) } : {}),
          infer: (_first, features, steps, state) => this.o.engine.inferHead(m, features, steps, state, urgent),
          onOutput: (start, probs) => {
            this.store(store, start, probs);
            this.emit();
          },
          onError: (e) => this.o.onError(e),
        }),
      );
      return;
    }
    this.runners.push(
      new ProvisionalRunner({
        model: m,
        // the network alone: encoder views (gender) fuse into finals only
        infer: (features, steps) => this.o.engine.infer(m, features, steps, urgent),
        onOutput: (start, probs) => {
          this.store(store, start, probs);
          this.emit();
        },
        onError: (e) => this.o.onError(e),
        lookahead: plan.lookahead,
        align: plan.stride,
        leftContext: plan.leftContext,
        finalFrom: () => this.o.nextFinal() * this.o.per,
        ...(this.gate ? { shows: (from: number, to: number) => this.shows(gated, from, to) } : {}),
      }),
    );
  }

  /** Appends outputs from `start`; after a gap (steps whose final came first) the store starts again there. */
  private store(store: StepBuffer, start: number, probs: Float32Array): void {
    if (store.end < start) {
      store.clear();
      store.start = start;
    }
    store.append(probs);
  }

  /**
   * Sends, tier by tier (fastest first), the provisional message of every output step whose
   * final is not sent yet and which has this tier's inputs; a step some input skipped (its
   * final came first there) gets none from this tier.
   */
  private emit(): void {
    if (this.stopped) return;
    const { per } = this.o;
    for (const tier of this.tiers) {
      let available = Infinity;
      for (const n of tier.inputs) available = Math.min(available, this.probs.get(n)!.end);
      for (let k = Math.max(tier.next, this.o.nextFinal()); ; k++) {
        const from = k * per;
        const to = from + per;
        if (available < to) break;
        tier.next = k + 1;
        const probs: Record<string, Float32Array> = {};
        let complete = true;
        for (const n of tier.inputs) {
          const store = this.probs.get(n)!;
          if (store.start > from) complete = false;
          else probs[n] = store.view(from, to);
        }
        if (!complete) continue;
        const agg = tier.decider.aggregate(this.o.levels.view(from, to), probs, 0, to - from, () => STEP_MS);
        const { step } = tier.decider.timeStep(k * this.o.outputPeriodMs, agg.levelDb, agg.avg, tier.decider.options.includeRaw === true);
        tier.sent++;
        this.o.onStep(step);
        if (this.stopped) return;
      }
    }
    this.trim();
  }

  /**
   * Whether a provisional answer for steps [from, to) (whole output steps) can show in a message:
   * some output step is not silent, and for a model the speech model gates (`gated`), the speech
   * model's provisional label there is speech (or not known yet). The same rules as the tiers'
   * deciders (docs/results.md), so skipping a call changes no message.
   */
  private shows(gated: boolean, from: number, to: number): boolean {
    const gate = this.gate!;
    const speech = this.probs.get(SPEECH);
    for (let k = from; k < to; k += this.o.per) {
      const end = Math.min(k + this.o.per, to);
      const levels = this.o.levels.view(k, end);
      // a silent output step shows `silence` whatever any model says, speech's answer or not
      if (stepLevelDb(levels, 0, end - k, () => STEP_MS) < this.o.decider.volumeThreshold) continue;
      if (!gated) return true;
      // speech's answer not in yet (a speaker model's group ends on a step speech answers one step later): call
      if (!speech || speech.start > k || speech.end < end) return true;
      const agg = gate.aggregate(levels, { [SPEECH]: speech.view(k, end) }, 0, end - k);
      const [label] = gate.decide(agg.levelDb, agg.avg, 0);
      if (label!.result === 'speech') return true;
    }
    return false;
  }

  /** Keeps each model's outputs from the first step a tier still needs. */
  private trim(): void {
    let from = Infinity;
    for (const t of this.tiers) from = Math.min(from, t.next);
    if (from === Infinity) from = this.o.nextFinal();
    for (const store of this.probs.values()) store.dropBefore(from * this.o.per);
  }
}
