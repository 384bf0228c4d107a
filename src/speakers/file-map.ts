/**
 * The speaker map of one channel of a file job: collects the embeddings of the encoder stage's
 * windows while the file is decoded, then clusters them all at once (clustering.ts) into the
 * per-step probabilities post-processing decides labels from. Memory: one 256-float embedding per
 * embedded window (~4,700 per hour of speech at the shipped hop), nothing per step until the end.
 *
 * A file job knows where the speech model heard speech: only windows that are mostly speech are
 * clustered (music or noise loud enough to be embedded does not make a speaker), and a cluster that
 * wins no speech step is no speaker. Without a caller's count, a learnt rule keeps apart long clusters
 * it calls two voices and merges speakers it calls one (alike-merge.ts). Speakers are numbered by
 * their first speech step.
 */
import type { WindowOutcome } from '../inference/encoder-stage';
import { argmax } from '../analysis/postprocess';
import { centredOn, dot, meanEmbedding, normalise, stepProbabilities, windowProbabilities, type EmbeddedWindow } from './clustering';
import { speakerKeys, type SpeakerMapInfo } from './manifest';
import { SpeakerEmbeddingSums } from './speaker-gender';
import { WindowStore, type PackedWindows } from './clustering-protocol';
import { clusterSpeakers } from './free-clustering';
import { whiten, type Whitening } from './whitening';

export interface ChannelSpeakers {
  /** speaker_1..speaker_K: the speakers found (at least one, so every speech step has a label). */
  keys: string[];
  /** [steps][K] probabilities, K = keys.length. */
  probs: Float32Array;
  /** Each speaker's speech windows (unit embeddings, not centred), for its gender (speaker-gender.ts). */
  embeddings: SpeakerEmbeddingSums;
}

/** A window is clustered when at least this share of its steps is speech. */
const MIN_SPEECH_SHARE = 0.5;

/**
 * The windows with the mean embedding of the clustered ones taken away (then unit length again):
 * what the voices of one recording share (language, channel, room) no longer makes them alike, so
 * one threshold separates speakers across recordings (models/speakers/MODEL_CARD.md: DER 0.229 ->
 * 0.203 on the tuning corpora). `clustered` is a subset of `all`; both come back centred.
 */
function centred(clustered: readonly EmbeddedWindow[], all: readonly EmbeddedWindow[]): { clustered: EmbeddedWindow[]; all: EmbeddedWindow[] } {
  if (clustered.length === 0) return { clustered: [], all: [...all] };
  const mean = meanEmbedding(clustered);
  const map = new Map<EmbeddedWindow, EmbeddedWindow>();
  // one buffer for all the centred copies (one per window was an hour's 9,000 small buffers)
  const dim = mean.length;
  const packed = new Float64Array(all.length * dim);
  all.forEach((w, i) => map.set(w, { window: w.window, embedding: centredOn(w.embedding, mean, packed.subarray(i * dim, (i + 1) * dim)) }));
  return { clustered: clustered.map((w) => map.get(w)!), all: all.map((w) => map.get(w)!) };
}

export class FileSpeakerMap {
  private readonly windows = new WindowStore();

  constructor(private readonly map: SpeakerMapInfo) {}

  /** The next window's outcome (the encoder stage reports them in order). */
  pushWindow(o: WindowOutcome): void {
    if (o.kind === 'embedded') this.windows.push(o.window, normalise(o.embeddings[0]!));
  }

  /** Hands the embedded windows over, packed (for the clustering thread); the map holds none afterwards. */
  take(): PackedWindows {
    return this.windows.take();
  }

  /** Clusters the channel's windows here, on the calling thread (speakersOfFile). */
  finish(steps: number, speech: Uint8Array, counts: FileCounts = {}): ChannelSpeakers {
    return speakersOfFile(this.map, this.windows.windows(), steps, speech, counts);
  }
}

/** A caller's counts (query parameters num_speakers / max_speakers). */
export interface FileCounts {
  numSpeakers?: number;
  maxSpeakers?: number;
}

/**
 * Clusters a channel's embedded windows (window order); `maxSpeakers` defaults to the model's.
 * `speech[s]` is 1 where step s is speech (the speech model's decision, as post-processing takes
 * it). A pure function of its inputs: the service runs it on the clustering thread
 * (clustering-thread.ts), tests and tools here.
 */
export function speakersOfFile(map: SpeakerMapInfo, windows: readonly EmbeddedWindow[], steps: number, speech: Uint8Array, counts: FileCounts = {}): ChannelSpeakers {
  const { params } = map;
  const W = params.windowSteps;
  const speechShare = (w: EmbeddedWindow): number => {
    const from = w.window * params.hopSteps;
    let n = 0;
    for (let s = from; s < Math.min(steps, from + W); s++) n += speech[s]!;
    return n / W;
  };
  const speechy = windows.filter((w) => speechShare(w) >= MIN_SPEECH_SHARE);
  const chosen = speechy.length > 0 ? speechy : windows;
  const clustered = map.centre ? centred(chosen, windows) : { clustered: chosen, all: windows };
  const { whitening } = map;
  const plain = chosen.map((w) => w.embedding);
  let { centroids } = clusterSpeakers(clustered.clustered, plain, map, counts.maxSpeakers ?? map.defaultMaxSpeakers, counts.numSpeakers);
  // keep the speakers that win a speech step, numbered by the first one
  const all = clustered.all;
  // each window is whitened where it is used (five times in all), not kept whitened: a whitened copy of an hour's
  // windows (14 MB) saved ~2 s of its clustering but raised the job's peak memory (docs/benchmarks.md)
  const scoreWhitened = whitening && map.whitenedScores ? whitening : undefined;
  const probsWith = (cs: readonly Float64Array[]): Float32Array => {
    let vectors: { window: number; probs: number[] }[];
    if (scoreWhitened && cs.length > 0) {
      const wcs = whitenedCentroids(cs, clustered.clustered, plain, scoreWhitened);
      const scratch = new Float64Array(scoreWhitened.length);
      vectors = windows.map((w) => ({ window: w.window, probs: windowProbabilities(whiten(scoreWhitened, w.embedding, scratch), wcs, params.temperature) }));
    } else vectors = all.map((w) => ({ window: w.window, probs: windowProbabilities(w.embedding, cs, params.temperature) }));
    return stepProbabilities(vectors, steps, Math.max(1, cs.length), params, true);
  };
  if (centroids.length > 1) {
    const probs = probsWith(centroids);
    const K = centroids.length;
    const first = new Array<number>(K).fill(Infinity);
    for (let s = 0; s < steps; s++) {
      if (!speech[s]) continue;
      const k = argmax(probs.subarray(s * K, (s + 1) * K));
      if (first[k] === Infinity) first[k] = s;
    }
    const order = centroids.map((_, k) => k).filter((k) => first[k]! < Infinity).sort((a, b) => first[a]! - first[b]!);
    if (order.length > 0) centroids = order.map((k) => centroids[k]!);
  }
  const K = Math.max(1, centroids.length);
  return { keys: speakerKeys(K), probs: probsWith(centroids), embeddings: speakerWindows(chosen, clustered.clustered, centroids) };
}

/**
 * The speakers' centroids of the whitened, uncentred windows (`whitened_scores`, speakers 1.7.0): each
 * clustered window counts for the speaker whose centroid over `compared` is closest (ties: the lower
 * number); a speaker no window is closest to gets zeros. Windows scored against these (one view that
 * tells voices apart, as streams compare them) were given the right speaker more often than in the
 * clustered view: tuning conversations 3.8 -> 3.6 % DER (2-4 speakers), models/speakers/MODEL_CARD.md.
 */
function whitenedCentroids(
  centroids: readonly Float64Array[],
  compared: readonly EmbeddedWindow[],
  plain: readonly Float64Array[],
  m: Whitening,
): Float64Array[] {
  const sums = centroids.map(() => new Float64Array(m.length));
  const scratch = new Float64Array(m.length);
  compared.forEach((w, i) => {
    const k = argmax(centroids.map((c) => dot(c, w.embedding)));
    const v = whiten(m, plain[i]!, scratch);
    for (let d = 0; d < v.length; d++) sums[k]![d]! += v[d]!;
  });
  return sums.map((s) => normalise(s));
}

/** Each clustered window (unit, `original`) summed into the speaker whose centroid is closest to it (`compared`, the same windows as clustered; ties: the lower number). */
function speakerWindows(original: readonly EmbeddedWindow[], compared: readonly EmbeddedWindow[], centroids: readonly Float64Array[]): SpeakerEmbeddingSums {
  const sums = new SpeakerEmbeddingSums();
  if (centroids.length === 0) return sums;
  compared.forEach((w, i) => sums.add(argmax(centroids.map((c) => dot(c, w.embedding))), original[i]!.embedding));
  return sums;
}
