/**
 * The encoder views of one channel (views.ts): models whose views decide windows alike (window
 * length, hop, voicing gate) share one encoder stage, so gender, arousal and emotions reading
 * the same encoders cost one encoder call per window, not three. The shared stage embeds every
 * run position that any of its models' schedules asks for (`every` = their greatest common
 * divisor), and runs at each position only the encoders some model reads there; each model's
 * ViewFusion reads its own positions alone, so its results never depend on the others.
 */
import { AurisError } from '../errors';
import { EncoderStage } from './encoder-stage';
import type { ModelInfo } from './registry';
import type { OutputFn } from './runner';
import { ViewFusion } from './view-fusion';
import { argmax } from '../analysis/postprocess';
import { gcd, type EncoderInfo, type ViewSchedule } from './views';

/** Runs one encoder on one window's samples (ownership passes) -> its embedding. */
export type EmbedFn = (encoder: EncoderInfo, pcm: Float32Array) => Promise<Float32Array>;

interface Member {
  fusion: ViewFusion;
  every: number;
  /** Indices of its encoders in the group's list. */
  encoders: number[];
}

interface Group {
  schedule: ViewSchedule;
  /** The union of the members' encoders; a window outcome's embeddings are in this order. */
  encoders: EncoderInfo[];
  members: Member[];
}

/** What makes two schedules decide the same windows (all but `every`). */
function windowKey(s: ViewSchedule): string {
  return JSON.stringify([s.windowSteps, s.hopSteps ?? s.windowSteps, s.minVoicedSteps, s.gateDb, s.speechGate ?? null]);
}

export class ChannelViews {
  private readonly groups = new Map<string, Group>();
  /** Stages made elsewhere (a speaker map's) that take the speech model's decisions too. */
  private readonly adopted: EncoderStage[] = [];
  private built: EncoderStage[] | undefined;
  /** Whether the speech model's output feeds the stages (attachSpeech): a speech-gated schedule needs it. */
  private speechAttached = false;

  constructor(private readonly embed: EmbedFn) {}

  /** Where `model`'s network output goes: `output` itself, or through the fusion with its views. */
  attach(model: ModelInfo, output: OutputFn): OutputFn {
    const views = model.views;
    if (!views) return output;
    if (this.built) throw new AurisError('INTERNAL', 'ChannelViews.attach() after its stages were built');
    const key = windowKey(views.schedule);
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = { schedule: views.schedule, encoders: [], members: [] }));
    const g = group;
    const encoders = views.views.map((v) => {
      const i = g.encoders.findIndex((e) => e.modelPath === v.encoder.modelPath);
      return i >= 0 ? i : g.encoders.push(v.encoder) - 1;
    });
    const fusion = new ViewFusion(views, output, encoders);
    g.members.push({ fusion, every: views.schedule.every, encoders });
    return (_start, probs, steps) => fusion.pushNet(probs, steps);
  }

  /**
   * Where the speech model's output goes: `output`, and each step's decision (class `speechIndex`
   * the argmax) to the stages whose schedules are speech-gated.
   */
  attachSpeech(model: ModelInfo, output: OutputFn, speechIndex: number): OutputFn {
    if (this.built) throw new AurisError('INTERNAL', 'ChannelViews.attachSpeech() after its stages were built');
    const C = model.rawKeys.length;
    if (speechIndex < 0 || speechIndex >= C) throw new AurisError('INTERNAL', `${model.name} has no speech class`);
    this.speechAttached = true;
    const next = this.attach(model, output);
    let gated: EncoderStage[] | undefined; // the stages are built once every model is attached
    return (start, probs, steps) => {
      next(start, probs, steps);
      gated ??= this.stages.filter((s) => s.speechGated);
      if (gated.length === 0) return;
      const flags = new Uint8Array(steps);
      for (let s = 0; s < steps; s++) flags[s] = argmax(probs.subarray(s * C, (s + 1) * C)) === speechIndex ? 1 : 0;
      for (const stage of gated) stage.pushSpeech(flags, steps);
    };
  }

  /**
   * A stage made elsewhere (a speaker map's, engine.speakerStage) joins this channel's: it is among
   * `stages`, and gets the speech model's decisions when its schedule is speech-gated.
   */
  adopt(stage: EncoderStage): EncoderStage {
    if (this.built) throw new AurisError('INTERNAL', 'ChannelViews.adopt() after its stages were built');
    this.adopted.push(stage);
    return stage;
  }

  /**
   * One stage per group, built once every model is attached, then the adopted ones: the caller
   * pushes the channel's levels and samples to each and ends it.
   */
  get stages(): EncoderStage[] {
    if (!this.built && !this.speechAttached && ([...this.groups.values()].some((g) => g.schedule.speechGate) || this.adopted.some((s) => s.speechGated))) {
      throw new AurisError('INTERNAL', 'an encoder stage gated by speech needs the speech model attached (attachSpeech)');
    }
    this.built ??= [...this.groups.values()].map((g) => {
      const every = g.members.map((m) => m.every).reduce(gcd);
      return new EncoderStage({
        schedule: { ...g.schedule, every },
        embed: (pcm, run) => this.embedAt(g, pcm, run),
        onWindow: (o) => g.members.forEach((m) => m.fusion.pushWindow(o)),
      });
    }).concat(this.adopted);
    return this.built;
  }

  /** The encoders some member reads at run position `run`, on one window's samples. */
  private embedAt(g: Group, pcm: Float32Array, run: number): Promise<(Float32Array | undefined)[]> {
    const needed = new Set<number>();
    for (const m of g.members) if (run % m.every === 0) m.encoders.forEach((i) => needed.add(i));
    const order = [...needed];
    const last = order.length - 1;
    // each encoder job owns its input (the pool may transfer it to a worker): copies for all but the last
    return Promise.all(order.map((i, k) => this.embed(g.encoders[i]!, k === last ? pcm : pcm.slice()))).then((embs) => {
      const out: (Float32Array | undefined)[] = new Array(g.encoders.length).fill(undefined);
      order.forEach((i, k) => (out[i] = embs[k]));
      return out;
    });
  }
}
