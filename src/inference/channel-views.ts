/**
 * The encoder views of one channel (views.ts): models whose views share a schedule share one
 * encoder stage, so gender, arousal and emotions reading the same speaker encoder cost one
 * encoder call per window, not three. Each model's network output passes through its own
 * ViewFusion, fed by the shared stage's window outcomes.
 */
import { EncoderStage } from './encoder-stage';
import type { ModelInfo } from './registry';
import type { OutputFn } from './runner';
import { ViewFusion } from './view-fusion';
import { scheduleKey, type EncoderInfo } from './views';

/** Runs one encoder on one window's samples (ownership passes) -> its embedding. */
export type EmbedFn = (encoder: EncoderInfo, pcm: Float32Array) => Promise<Float32Array>;

interface Group {
  stage: EncoderStage;
  /** The union of the encoders of the group's views; a window outcome's embeddings are in this order. */
  encoders: EncoderInfo[];
  fusions: ViewFusion[];
}

export class ChannelViews {
  private readonly groups = new Map<string, Group>();

  constructor(private readonly embed: EmbedFn) {}

  /** Where `model`'s network output goes: `output` itself, or through the fusion with its views. */
  attach(model: ModelInfo, output: OutputFn): OutputFn {
    const views = model.views;
    if (!views) return output;
    const key = scheduleKey(views.schedule);
    let g = this.groups.get(key);
    if (!g) {
      const group: Group = {
        encoders: [],
        fusions: [],
        stage: new EncoderStage({
          schedule: views.schedule,
          // read at call time: every model is attached before the first samples arrive
          embed: (pcm) => this.embedAll(group.encoders, pcm),
          onWindow: (o) => group.fusions.forEach((f) => f.pushWindow(o)),
        }),
      };
      this.groups.set(key, group);
      g = group;
    }
    const group = g;
    const index = views.views.map((v) => {
      let i = group.encoders.findIndex((e) => e.modelPath === v.encoder.modelPath);
      if (i < 0) i = group.encoders.push(v.encoder) - 1;
      return i;
    });
    const fusion = new ViewFusion(views, output, index);
    group.fusions.push(fusion);
    return (_start, probs, steps) => fusion.pushNet(probs, steps);
  }

  /** One stage per distinct schedule: the caller pushes the channel's levels and samples to each and ends it. */
  get stages(): EncoderStage[] {
    return [...this.groups.values()].map((g) => g.stage);
  }

  private embedAll(encoders: EncoderInfo[], pcm: Float32Array): Promise<Float32Array[]> {
    const last = encoders.length - 1;
    // each encoder job owns its input (the pool may transfer it to a worker): copies for all but the last
    return Promise.all(encoders.map((e, i) => this.embed(e, i === last ? pcm : pcm.slice())));
  }
}
