/**
 * Each speaker's voice gender, in the speaker map's summary when `gender` runs beside `speakers`
 * (docs/speakers.md "Each speaker's gender"). Gender 2.0 reads a voice through a linear head of
 * ours on the speaker encoder's window embeddings (models/gender manifest "views"). The speaker map
 * embeds its windows with the full-band float CAM++; gender 2.3's view is CAM++ in int8 hearing up to
 * 4.2 kHz (another embedding space), so gender also ships a head on the map's encoder for this summary
 * alone ("views.speaker_heads"); failing that, a view on the map's encoder itself or on an int8 copy of
 * it (manifest "quantised_from": the same space, gender 2.2) applies to a speaker's windows as they are.
 * A speaker's probabilities are softmax(head(mean of its windows' unit embeddings)): for two classes,
 * the sigmoid of the mean of its windows' log-odds. Pooling every window of a voice is surer than any
 * one segment: on simulated conversations of corpora the head never saw, the speakers a file job finds
 * get the right gender 0.954 of the time (models/speakers/MODEL_CARD.md).
 *
 * Which windows count: a file job's speech windows (the clustered ones), each with the speaker
 * whose centroid is closest; a stream's windows with the speaker they were given. Python twin:
 * training/diarization/speaker_gender.py.
 */
import { roundFractions } from '../analysis/postprocess';
import type { ModelInfo } from '../inference/registry';
import { dot, softmax } from './clustering';
import type { ModelViews } from '../inference/views';

export interface SpeakerGenderHead {
  /** The gender model's raw keys (female, male), in the head's class order. */
  classes: readonly string[];
  /** [classes][dim] row-major and [classes] (two classes: class 0's row is zero). */
  weights: Float32Array;
  bias: Float32Array;
  dim: number;
}

/** The gender model's head on `encoderName`'s embeddings (a speaker head, a view's, or a quantised copy's), if it has one. */
export function speakerGenderHead(views: ModelViews | undefined, rawKeys: readonly string[], encoderName: string): SpeakerGenderHead | undefined {
  const view = views?.speakerHeads.find((v) => v.encoder.name === encoderName)
    ?? views?.views.find((v) => v.encoder.name === encoderName)
    ?? views?.views.find((v) => v.encoder.quantisedFrom === encoderName);
  if (!view || view.head.bias.length !== rawKeys.length) return undefined;
  return { classes: rawKeys, weights: view.head.weights, bias: view.head.bias, dim: view.encoder.dim };
}

export interface EmbeddingSumsData {
  sums: Float64Array[];
  counts: number[];
}

/** Running sums of each speaker's unit window embeddings (speakers numbered from 0). */
export class SpeakerEmbeddingSums {
  private readonly sums: Float64Array[] = [];
  private readonly counts: number[] = [];

  add(speaker: number, embedding: ArrayLike<number>): void {
    while (this.sums.length <= speaker) {
      this.sums.push(new Float64Array(embedding.length));
      this.counts.push(0);
    }
    const sum = this.sums[speaker]!;
    for (let i = 0; i < sum.length; i++) sum[i]! += embedding[i]!;
    this.counts[speaker]!++;
  }

  /** The sums and counts as plain data (they cross from the clustering thread: clustering-thread.ts). */
  toData(): EmbeddingSumsData {
    return { sums: this.sums, counts: this.counts };
  }

  static fromData(d: EmbeddingSumsData): SpeakerEmbeddingSums {
    const out = new SpeakerEmbeddingSums();
    out.sums.push(...d.sums);
    out.counts.push(...d.counts);
    return out;
  }

  /** Speaker k's mean embedding (undefined: no window). */
  mean(k: number): Float64Array | undefined {
    const n = this.counts[k] ?? 0;
    return n > 0 ? this.sums[k]!.map((v) => v / n) : undefined;
  }
}

/** The head's class probabilities for one mean embedding: softmax of its logits. */
export function genderProbabilities(head: SpeakerGenderHead, mean: ArrayLike<number>): number[] {
  return softmax(Array.from(head.bias, (b, c) => b + dot(head.weights.subarray(c * head.dim, (c + 1) * head.dim), mean)));
}

/**
 * `speaker_<n>_<class>_probability` for speakers 1..count (4 decimals, each speaker's summing to
 * exactly 1); a speaker with no window gets none.
 */
export function speakerGenderSummary(head: SpeakerGenderHead, sums: SpeakerEmbeddingSums, count: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (let k = 0; k < count; k++) {
    const mean = sums.mean(k);
    if (!mean) continue;
    const p = roundFractions(genderProbabilities(head, mean));
    head.classes.forEach((c, i) => (out[`speaker_${k + 1}_${c}_probability`] = p[i]!));
  }
  return out;
}

/** The head for a request's speaker map summary: only when it asks for `gender` beside `speakers`. */
export function requestedSpeakerGender(infos: readonly ModelInfo[], requested: readonly string[]): SpeakerGenderHead | undefined {
  const speakers = infos.find((m) => m.speakerMap);
  const gender = infos.find((m) => m.name === 'gender');
  if (!speakers?.speakerMap || !gender || !requested.includes('gender')) return undefined;
  return speakerGenderHead(gender.views, gender.rawKeys, speakers.speakerMap.encoder.name);
}
