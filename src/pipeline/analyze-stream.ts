/**
 * StreamSession: the transport-independent streaming processor behind the gRPC Analyze call.
 *
 *   raw PCM chunks -> native StreamFrontend (resampler + framer, state kept across chunks)
 *                  -> one StreamRunner per model (inference on the worker pool, models'
 *                     context kept between calls)
 *                  -> StepDecider.aggregate/timeStep (the post-processing of file jobs)
 *                  -> onStep(time-step result), in order, as soon as each output step's audio
 *                     plus the models' lookahead has arrived.
 *
 * The results equal a file job on the same samples (docs/streaming.md): the same front end,
 * exact windowing, the same aggregation and decision code, and the same duration rules for the
 * last (partial) step and the summary fractions. Memory is bounded: the features of the
 * models' context plus the steps in flight, and the per-step outputs of one output step.
 */
import { openStreamCount, StreamFrontend } from '../audio';
import { g711ToS16, type G711Law } from '../audio/g711';
import type { FeatureChunk, SampleEncoding } from '../audio/types';
import { AurisError } from '../errors';
import { type AnalysisRequest, STEP_MS, volumeThresholdOf } from '../analysis/options';
import { modelsToRun, SPEECH_LABEL, SPEECH_MODEL } from '../analysis/policies';
import { effectiveDurationMs, endTimestampMs, roundFractions, SegmentBuilder, StepDecider, type PostProcessOptions, type Segment, type TimeStepResult } from '../analysis/postprocess';
import type { InferenceEngine } from '../inference/engine';
import type { ModelInfo } from '../inference/registry';
import { StepBuffer } from '../inference/step-buffer';
import type { OutputFn } from '../inference/runner';
import { StreamRunner } from '../inference/stream-runner';
import type { ProvisionalPlan } from '../inference/provisional-runner';
import type { EncoderStage } from '../inference/encoder-stage';
import type { ChannelViews } from '../inference/channel-views';
import { gcd, speechGatedModels } from '../inference/views';
import { LiveSpeakerMap } from '../speakers/live-map';
import { requestedSpeakerGender, speakerGenderSummary, type SpeakerGenderHead } from '../speakers/speaker-gender';
import { ProvisionalResults } from './provisional-results';

/** Sample encodings of a live stream: the front end's PCM, or G.711 (8-bit, expanded to s16le here). */
export type StreamEncoding = SampleEncoding | G711Law;

/** A live stream's analysis: the AnalysisRequest of file jobs (one channel, always) plus the stream's audio format. */
export interface StreamSessionOptions extends AnalysisRequest {
  /** The analysed channel (0-based). */
  channel: number;
  sampleRate: number;
  encoding: StreamEncoding;
  channels: number;
  /** Most output steps per model call (default 256). */
  maxWindowSteps?: number;
  /** Use the models' stateful streaming graphs where they have one (default true). */
  statefulModels?: boolean;
  /**
   * Provisional results (docs/streaming.md): each output step is also answered before its
   * final, by the same networks with the missing future treated as the signal end, each model
   * as soon as its plan allows (src/pipeline/provisional-results.ts); the speaker map's with its
   * latest window (src/speakers/live-map.ts). Absent or false: finals only.
   */
  provisional?: boolean;
  /** The same provisional plan for every model instead of each model's own (benchmarks, tests). */
  provisionalPlan?: ProvisionalPlan;
}

export interface StreamSummary {
  /** When includeSummary, per requested model: `<class>_fraction` -> share of the audio (4 decimals, sum exactly 1). */
  models?: Record<string, Record<string, number>>;
  /** frames / sample rate, ms (clamped into the last step like file jobs). */
  durationMs: number;
  /** End of the audio in integer ms (as the last transition end of a file job). */
  endTimestampMs: number;
  /** Output steps sent. */
  steps: number;
  /** Per requested model, when includeTransitions: the segments of equal labels (as in file jobs). */
  transitions?: Record<string, Segment[]>;
}

export interface StreamSessionEvents {
  /**
   * One output step (SPEC time-step shape, rounded). Finals (final = true) come in order, one per
   * output step. With `provisional`, provisional results (final = false) of a step may come
   * first (one per tier of models, each holding all the earlier ones held: provisional-results.ts):
   * provisionals come in order too, and never after their step's final.
   */
  onStep(step: TimeStepResult, final: boolean): void;
  /** Inference failed: the session is unusable (close it). */
  onError(err: Error): void;
  /** Outputs arrived (the backlog may have shrunk). */
  onProgress?(): void;
}

const BYTES_PER_SAMPLE: Record<StreamEncoding, number> = { s16le: 2, f32le: 4, mulaw: 1, alaw: 1 };

export class StreamSession {
  readonly options: StreamSessionOptions;
  /** Models that run (requested + speech when gating). */
  readonly modelsRun: readonly string[];
  /** The largest right context among the models that run, steps. */
  readonly lookaheadSteps: number;
  private readonly decider: StepDecider;
  private readonly frontend: StreamFrontend;
  private readonly runners: StreamRunner[];
  /** Provisional results, when asked for. */
  private readonly provisional: ProvisionalResults | undefined;
  /** Encoder stages of the models with encoder views and of the speaker map. */
  private readonly stages: EncoderStage[] = [];
  /** The speaker map, when `speakers` runs: raw values and the summary list the speakers it found. */
  private speakers: { info: ModelInfo; map: LiveSpeakerMap; gender: SpeakerGenderHead | undefined } | undefined;
  private readonly levels = new StepBuffer(1);
  private readonly probs = new Map<string, StepBuffer>();
  private readonly per: number;
  private readonly frameBytes: number;
  private readonly summaryTime: Float64Array[];
  private readonly segments: SegmentBuilder[] | undefined;
  private readonly g711: G711Law | undefined;
  private bytes = 0;
  /** Steps produced by the front end. */
  private steps = 0;
  /** Next output step to send. */
  private nextOut = 0;
  private frontendEnded = false;
  private closed = false;
  private failure: Error | undefined;
  private finish: { resolve: () => void; reject: (e: Error) => void } | undefined;

  constructor(
    engine: InferenceEngine,
    options: StreamSessionOptions,
    private readonly events: StreamSessionEvents,
  ) {
    this.options = options;
    if (!Number.isInteger(options.outputPeriodMs) || options.outputPeriodMs <= 0 || options.outputPeriodMs % STEP_MS !== 0) {
      throw new AurisError('INVALID_ARGUMENT', `output_period must be a positive multiple of ${STEP_MS} ms`);
    }
    this.per = options.outputPeriodMs / STEP_MS;
    this.frameBytes = options.channels * BYTES_PER_SAMPLE[options.encoding];
    this.modelsRun = modelsToRun(options.models);
    const infos: ModelInfo[] = engine.registry.resolve(this.modelsRun);
    this.decider = new StepDecider(this.deciderOptions(engine));
    this.summaryTime = this.decider.policies.map((p) => new Float64Array(p.summaryClasses.length));
    if (options.includeTransitions) this.segments = this.decider.policies.map(() => new SegmentBuilder(options.outputPeriodMs));
    this.g711 = options.encoding === 'mulaw' || options.encoding === 'alaw' ? options.encoding : undefined;
    this.lookaheadSteps = Math.max(...infos.map((m) => m.context.rightSteps));
    this.frontend = new StreamFrontend({
      sampleRate: options.sampleRate,
      channels: options.channels,
      encoding: this.g711 ? 's16le' : (options.encoding as SampleEncoding),
      channel: options.channel,
    });
    const views = engine.channelViews();
    const networks = infos.filter((m) => {
      if (!m.speakerMap) return true;
      this.startSpeakerMap(engine, m, views);
      return false;
    });
    const speechAlign = speechCallAlign(infos, this.per);
    this.runners = networks.map((m) => this.finalRunner(engine, m, views, m.name === SPEECH_MODEL ? speechAlign : this.per));
    this.stages.push(...views.stages);
    if (options.provisional) {
      const speakerMap = this.speakers?.info;
      const provisional = new ProvisionalResults({
        engine,
        networks,
        decider: this.deciderOptions(engine),
        per: this.per,
        outputPeriodMs: options.outputPeriodMs,
        ...(options.provisionalPlan ? { plan: options.provisionalPlan } : {}),
        levels: this.levels,
        nextFinal: () => this.nextOut,
        onStep: (step) => {
          if (!this.closed && !this.failure) this.events.onStep(step, false);
        },
        onError: (e) => this.fail(e),
        ...(speakerMap ? { speakerMap } : {}),
      });
      if (this.speakers) this.speakers.map.onProvisional = (start, probs) => provisional.speakerOutput(start, probs);
      this.provisional = provisional;
    }
  }

  /** Provisional messages sent so far. */
  get provisionalSent(): number {
    return this.provisional?.sent ?? 0;
  }

  /** Post-processing options of this stream's requested analysis (finals and provisional results alike). */
  private deciderOptions(engine: InferenceEngine): PostProcessOptions {
    const o = this.options;
    return {
      models: o.models,
      rawKeys: engine.registry.rawKeys(),
      confidenceTemperature: engine.registry.confidenceTemperatures(),
      outputPeriodMs: o.outputPeriodMs,
      volumeThreshold: volumeThresholdOf(o),
      includeRaw: o.includeRaw,
      // raw values of the speaker map: the speakers known to the windows of the step (the later ones are exactly 0)
      shownRawKeys: (model, probs) => (this.speakers?.info.name === model ? lastNonZero(probs) + 1 : undefined),
    };
  }

  /** The speaker map has no network: its encoder stage feeds an online assignment (src/speakers). */
  private startSpeakerMap(engine: InferenceEngine, m: ModelInfo, views: ChannelViews): void {
    const options = this.options;
    const store = new StepBuffer(m.rawKeys.length);
    this.probs.set(m.name, store);
    const cap = Math.min(options.numSpeakers ?? Infinity, options.maxSpeakers ?? m.speakerMap!.defaultMaxSpeakers);
    const live = new LiveSpeakerMap(m.speakerMap!, m.rawKeys.length, cap, (_start, probs) => {
      store.append(probs);
      this.emitReady();
      this.events.onProgress?.();
    }, () => this.steps, options.numSpeakers, engine.clustering.streams);
    // each speaker's gender in the summary when `gender` is requested too (speaker-gender.ts)
    const gender = options.includeSummary && engine.registry.has('gender') ? requestedSpeakerGender([m, engine.registry.get('gender')], options.models) : undefined;
    this.speakers = { info: m, map: live, gender };
    // its stage takes the speech model's decisions through the channel's views (a file speech gate, if set, gates files only)
    views.adopt(engine.speakerStage(m, (o) => live.pushWindow(o), { live: true }));
  }

  /** The runner of a network's final results (today's, equal to file jobs). */
  private finalRunner(engine: InferenceEngine, m: ModelInfo, views: ChannelViews, align: number): StreamRunner {
    const options = this.options;
    const store = new StepBuffer(m.rawKeys.length);
    this.probs.set(m.name, store);
    // encoder views are fused step by step exactly as in file jobs (src/inference/view-fusion.ts)
    const sink: OutputFn = (_start, probs) => {
      store.append(probs);
      this.emitReady();
      this.events.onProgress?.();
    };
    // the speech model's decisions also gate the encoder views' windows, as in file jobs
    const output = m.name === SPEECH_MODEL ? views.attachSpeech(m, sink, m.rawKeys.indexOf(SPEECH_LABEL)) : views.attach(m, sink);
    return new StreamRunner({
      model: m,
      infer: (features, steps) => engine.infer(m, features, steps),
      onOutput: output,
      onError: (e) => this.fail(e),
      align,
      maxWindowSteps: Math.max(options.maxWindowSteps ?? 256, 1),
      ...(m.streaming && options.statefulModels !== false
        ? { stateful: { ...m.streaming, infer: (first: number, features: Float32Array, steps: number, state: Float32Array) => engine.inferStateful(m, first, features, steps, state) } }
        : {}),
    });
  }

  /** Provisional model calls made so far (all models). */
  get provisionalCalls(): number {
    return this.provisional?.calls ?? 0;
  }

  /** Steps received by the models whose outputs are not back yet (beyond their lookahead). */
  get backlogSteps(): number {
    let m = 0;
    for (const r of this.runners) m = Math.max(m, r.backlog);
    return m;
  }

  /** Output steps sent so far. */
  get stepsSent(): number {
    return this.nextOut;
  }

  /** 64 ms steps produced by the front end so far. */
  get stepsReceived(): number {
    return this.steps;
  }

  /** Model calls made so far (all models). */
  get modelCalls(): number {
    return this.runners.reduce((a, r) => a + r.calls, 0);
  }

  /** Frames (samples per channel) received. */
  get frames(): number {
    return Math.floor(this.bytes / this.frameBytes);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Feeds raw PCM (any size, any alignment). Synchronous; keep chunks small (tens of KB). */
  push(audio: Uint8Array): void {
    if (this.closed) throw new AurisError('CLOSED', 'stream session is closed');
    if (this.frontendEnded) throw new AurisError('CLOSED', 'push() after end()');
    this.bytes += audio.byteLength;
    this.feed(this.frontend.push(this.g711 ? g711ToS16(this.g711, audio) : audio));
  }

  /**
   * No more audio: flushes the front end and the models, sends the remaining output steps
   * (the last one may be partial) and resolves with the summary (when includeSummary).
   * An empty stream rejects with EMPTY_AUDIO (AudioError).
   */
  async end(): Promise<StreamSummary | undefined> {
    if (this.closed) throw new AurisError('CLOSED', 'stream session is closed');
    if (!this.frontendEnded) {
      this.frontendEnded = true;
      this.feed(this.frontend.end());
      const done = new Promise<void>((resolve, reject) => (this.finish = { resolve, reject }));
      for (const r of this.runners) r.end();
      this.provisional?.end();
      for (const e of this.stages) e.end().then(() => this.emitReady(), (err: Error) => this.fail(err));
      this.emitReady();
      await done;
    }
    return this.options.includeSummary || this.options.includeTransitions ? this.summary() : undefined;
  }

  /**
   * Output backpressure: while held, no new model call starts, so no new results are made
   * beyond the calls in flight (the audio keeps being accepted); release resumes.
   */
  hold(on: boolean): void {
    for (const r of this.runners) r.hold(on);
    this.provisional?.hold(on);
  }

  /** Frees the native front end and the buffers now; outputs still in flight are dropped. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.frontend.close();
    for (const r of this.runners) r.close();
    this.provisional?.close();
    for (const e of this.stages) e.close();
    this.speakers?.map.close();
    this.finish?.reject(new AurisError('ABORTED', 'stream closed'));
    this.finish = undefined;
  }

  private feed(chunks: FeatureChunk[]): void {
    const chunk = chunks[0];
    if (!chunk || chunk.steps === 0) return;
    if (chunk.startStep !== this.steps) throw new Error(`front end returned steps from ${chunk.startStep}, expected ${this.steps}`);
    this.levels.append(chunk.levels.subarray(0, chunk.steps));
    this.steps += chunk.steps;
    for (const r of this.runners) r.push(chunk.features, chunk.steps);
    this.provisional?.push(chunk.features, chunk.steps);
    for (const e of this.stages) e.push(chunk.levels, chunk.pcm, chunk.steps).catch((err: Error) => this.fail(err));
    if (this.provisional) this.speakers?.map.provisionalReady();
  }

  private fail(e: Error): void {
    if (this.failure || this.closed) return;
    this.failure = e;
    this.finish?.reject(e);
    this.finish = undefined;
    this.events.onError(e);
  }

  /** Duration bookkeeping once the front end has ended (the last step may be partial). */
  private durationMs(): number {
    const durationMs = this.options.sampleRate > 0 && this.frames > 0 ? (this.frames / this.options.sampleRate) * 1000 : 0;
    return effectiveDurationMs(this.steps, durationMs > 0 ? durationMs : this.steps * STEP_MS);
  }

  /** Sends every output step whose steps all have outputs from every model. */
  private emitReady(): void {
    if (this.closed || this.failure) return;
    let available = Infinity;
    for (const store of this.probs.values()) available = Math.min(available, store.end);
    const lastMs = this.frontendEnded && this.steps > 0 ? this.durationMs() - (this.steps - 1) * STEP_MS : STEP_MS;
    for (;;) {
      const from = this.nextOut * this.per;
      let to = from + this.per;
      if (this.frontendEnded) {
        if (from >= this.steps) break;
        to = Math.min(to, this.steps);
      }
      if (available < to) break;
      const steps = this.steps;
      const ended = this.frontendEnded;
      const dur = (i: number): number => (ended && from + i === steps - 1 ? lastMs : STEP_MS);
      const probs: Record<string, Float32Array> = {};
      for (const [name, store] of this.probs) probs[name] = store.view(from, to);
      const agg = this.decider.aggregate(this.levels.view(from, to), probs, 0, to - from, dur);
      const { step, decisions } = this.decider.timeStep(this.nextOut * this.options.outputPeriodMs, agg.levelDb, agg.avg, this.options.includeRaw);
      if (this.options.includeSummary) {
        this.decider.policies.forEach((policy, m) => {
          const cls = policy.summaryClassOf(decisions[m]!.result);
          const i = policy.summaryClasses.indexOf(cls);
          if (i < 0) throw new Error(`internal: label ${cls} has no summary class in ${policy.name}`);
          this.summaryTime[m]![i]! += agg.spanMs;
        });
      }
      this.segments?.forEach((b, m) => b.add(decisions[m]!.result, decisions[m]!.confidence, agg.spanMs));
      this.nextOut++;
      this.levels.dropBefore(to);
      for (const store of this.probs.values()) store.dropBefore(to);
      this.provisional?.finalsSent(this.nextOut);
      this.events.onStep(step, true);
      if (this.closed) return;
    }
    if (this.frontendEnded && this.nextOut * this.per >= this.steps && this.runners.every((r) => r.done) && this.stages.every((e) => e.done)) {
      const f = this.finish;
      this.finish = undefined;
      f?.resolve();
    }
  }

  private summary(): StreamSummary {
    const durationMs = this.durationMs();
    const models: Record<string, Record<string, number>> = {};
    if (this.options.includeSummary) this.decider.policies.forEach((policy, m) => {
      const fr = roundFractions(policy.summaryClasses.map((_, i) => this.summaryTime[m]![i]! / durationMs));
      const obj: Record<string, number> = {};
      // the speaker map lists the speakers it found (speaker_1..speaker_K), then no_speech and silence
      const speakers = this.speakers?.info.name === policy.name ? this.speakers : undefined;
      const hidden = speakers ? new Set(policy.rawKeys.slice(Math.max(1, speakers.map.count))) : undefined;
      policy.summaryClasses.forEach((c, i) => {
        if (!hidden?.has(c)) obj[`${c}_fraction`] = fr[i]!;
      });
      // then each speaker's gender, when gender was requested too (speaker-gender.ts)
      if (speakers?.gender) Object.assign(obj, speakerGenderSummary(speakers.gender, speakers.map.embeddings, speakers.map.count));
      models[policy.name] = obj;
    });
    const lastStart = Math.max(0, this.nextOut - 1) * this.options.outputPeriodMs;
    const end = endTimestampMs(durationMs, lastStart);
    const out: StreamSummary = { durationMs, endTimestampMs: end, steps: this.nextOut };
    if (this.options.includeSummary) out.models = models;
    if (this.segments) {
      out.transitions = {};
      this.decider.policies.forEach((policy, m) => (out.transitions![policy.name] = this.segments![m]!.finish(end)));
    }
    return out;
  }
}

/** Index of the last non-zero value (-1: none). */
function lastNonZero(v: ArrayLike<number>): number {
  for (let i = v.length - 1; i >= 0; i--) if (v[i] !== 0) return i;
  return -1;
}

/** StreamFrontends alive in this process (native state not yet freed). */
export function liveNativeStreams(): number {
  return openStreamCount();
}

/**
 * Steps the speech model's final calls end on. Normally whole output steps (p): each output step
 * needs all its steps anyway. But a speech-gated encoder view (views.ts speechGate: a window's
 * first 13 steps, gender 2.1.1) waits for the speech outputs of a window's 13th step, and with
 * calls of p steps those can come up to p - 12 steps after the gated model's own outputs of the
 * output step the window starts in (4 steps at p = 16). Calls ending on multiples of
 * gcd(p, R_gated - R_speech) (the two models' lookaheads: 24 - 12) never make it wait, given a
 * gate of at most R_gated - R_speech + 1 steps (checked by simulation of the call boundaries).
 */
export function speechCallAlign(infos: readonly ModelInfo[], per: number): number {
  const speech = infos.find((m) => m.name === SPEECH_MODEL);
  const gated = speechGatedModels(infos);
  if (!speech || gated.length === 0) return per;
  return gated.reduce((a, m) => gcd(a, Math.max(1, m.context.rightSteps - speech.context.rightSteps)), per);
}
