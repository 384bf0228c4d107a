/**
 * The speaker map of one channel of a file job: collects the embeddings of the encoder stage's
 * windows while the file is decoded, then clusters them all at once (clustering.ts) into the
 * per-step probabilities post-processing decides labels from. Memory: one 256-float embedding per
 * embedded window (~4,700 per hour of speech at the shipped hop), nothing per step until the end.
 */
import type { WindowOutcome } from '../inference/encoder-stage';
import { clusterWindows, normalise, stepProbabilities, windowProbabilities, type EmbeddedWindow } from './clustering';
import { speakerKeys, type SpeakerMapInfo } from './manifest';

export interface ChannelSpeakers {
  /** speaker_1..speaker_K: the speakers found (at least one, so every speech step has a label). */
  keys: string[];
  /** [steps][K] probabilities, K = keys.length. */
  probs: Float32Array;
}

export class FileSpeakerMap {
  private readonly windows: EmbeddedWindow[] = [];

  constructor(private readonly map: SpeakerMapInfo) {}

  /** The next window's outcome (the encoder stage reports them in order). */
  pushWindow(o: WindowOutcome): void {
    if (o.kind === 'embedded') this.windows.push({ window: o.window, embedding: normalise(o.embeddings[0]!) });
  }

  /** Clusters the channel's windows; `maxSpeakers` defaults to the model's. */
  finish(steps: number, counts: { numSpeakers?: number; maxSpeakers?: number } = {}): ChannelSpeakers {
    const { params } = this.map;
    const c = clusterWindows(this.windows, params, counts.maxSpeakers ?? this.map.defaultMaxSpeakers, counts.numSpeakers);
    const K = Math.max(1, c.speakers);
    const vectors = this.windows.map((w) => ({ window: w.window, probs: windowProbabilities(w.embedding, c.centroids, params.temperature) }));
    return { keys: speakerKeys(K), probs: stepProbabilities(vectors, steps, K, params, true) };
  }
}
