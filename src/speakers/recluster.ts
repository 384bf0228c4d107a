/**
 * The speakers of a live stream told how many there are (num_speakers from 2 to
 * `recluster.maxSpeakers`: two-party calls). Deciding each window on its own (OnlineSpeakers) opens
 * the second speaker on the first window that sounds different and never revises a centroid; here,
 * every `every` windows, the stream's last `history` windows are centred on their mean and
 * clustered for exactly that count (clusterWindows, as a file job with num_speakers), and the new
 * clusters are mapped one-to-one onto the ids already sent (the mapping that agrees with the most
 * past windows), so a speaker keeps its number. Each window then takes its nearest centroid's id.
 * Before `minWindows` windows there is too little to cluster: OnlineSpeakers, capped at the count.
 * Held-out two-speaker conversations: DER 9.6 / 13.6 / 10.8 % (clean / telephone / noise) against
 * 21.5 / 22.3 / 23.1 % for OnlineSpeakers (models/speakers/MODEL_CARD.md). Python twin:
 * training/diarization/cluster.py recluster_assign (golden-tested).
 */
import { argmax } from '../analysis/postprocess';
import { centredOn, clusterWindows, dot, meanEmbedding, OnlineSpeakers, softmax, type Decision, type EmbeddedWindow, type SpeakerMapParams } from './clustering';
import { RecentWindows } from './recent-windows';

export interface ReclusterParams {
  /** Streams given num_speakers up to this re-cluster; larger counts use OnlineSpeakers. */
  maxSpeakers: number;
  /** Windows decided by OnlineSpeakers before the first clustering. */
  minWindows: number;
  /** Re-cluster every this many windows (the centroids are kept in between). */
  every: number;
  /** Windows kept and clustered (the most recent). */
  history: number;
  /**
   * Streams given no count: from this many windows on they re-cluster freely (free-recluster.ts,
   * speakers 1.8.0; every `freeEvery` over the last `history`); 0: never (OnlineSpeakers throughout).
   */
  freeMinWindows: number;
  /** ... and re-cluster every this many windows (speakers 1.8.1; `every` in a manifest before). */
  freeEvery: number;
}

/**
 * Cluster a -> speaker id, one-to-one (ids < K), maximising the past windows on which the new
 * clustering agrees with the ids given; the first best in lexicographic order of the id tuples.
 */
export function overlapMapping(assignment: readonly number[], ids: readonly number[], clusters: number, K: number): number[] {
  const agree = Array.from({ length: clusters }, () => new Array<number>(K).fill(0));
  for (let i = 0; i < assignment.length; i++) agree[assignment[i]!]![ids[i]!]! += 1;
  let best = -1;
  let bestMap = Array.from({ length: clusters }, (_, a) => a);
  const used = new Array<boolean>(K).fill(false);
  const cur: number[] = [];
  const walk = (a: number, score: number): void => {
    if (a === clusters) {
      if (score > best) {
        best = score;
        bestMap = [...cur];
      }
      return;
    }
    for (let b = 0; b < K; b++) {
      if (used[b]) continue;
      used[b] = true;
      cur.push(b);
      walk(a + 1, score + agree[a]![b]!);
      cur.pop();
      used[b] = false;
    }
  };
  walk(0, 0);
  return bestMap;
}

/** A clustering of a stream's kept windows for its count: the centroids, the mean taken away, and each window but the newest's cluster. */
export interface CountedClusters {
  centroids: Float64Array[];
  mean: Float64Array;
  /** The cluster of each kept window but the newest (the one being decided), in window order. */
  past: number[];
}

/**
 * Clusters a stream's kept windows (the newest last), centred on their mean, for exactly `speakers`.
 * A pure function of its inputs: the service runs it on the clustering thread (clustering-thread.ts),
 * tests and tools here.
 */
export function countedClusters(windows: readonly EmbeddedWindow[], params: SpeakerMapParams, speakers: number): CountedClusters {
  const mean = meanEmbedding(windows);
  const centred = windows.map((w) => ({ window: w.window, embedding: centredOn(w.embedding, mean) }));
  const c = clusterWindows(centred, params, speakers, speakers);
  return { centroids: c.centroids, mean, past: c.assignment.slice(0, windows.length - 1) };
}

/** Runs countedClusters (here, or on another thread: then the answer is a promise). */
export type CountedClusterer = (windows: readonly EmbeddedWindow[]) => CountedClusters | Promise<CountedClusters>;

export class ReclusteringSpeakers {
  private readonly warm: OnlineSpeakers;
  private readonly recent: RecentWindows;
  private readonly clusterer: CountedClusterer;
  private current: { mapping: number[]; centroids: Float64Array[]; mean: Float64Array } | undefined;

  constructor(
    private readonly params: SpeakerMapParams,
    private readonly recluster: ReclusterParams,
    /** The stream's num_speakers. */
    readonly speakers: number,
    /** Where the clustering runs (default: here, synchronously). */
    clusterer?: CountedClusterer,
  ) {
    this.warm = new OnlineSpeakers(params, speakers);
    this.recent = new RecentWindows(recluster.history);
    this.clusterer = clusterer ?? ((windows) => countedClusters(windows, params, speakers));
  }

  /** Speakers given an id so far. */
  get count(): number {
    return this.recent.used;
  }

  /**
   * The next embedded window (unit length, in window order): its speaker id and probabilities over
   * the ids; a promise when a clustering on another thread decides it (the caller adds the next
   * window only once it has the answer).
   */
  add(embedding: Float64Array, window: number): Decision | Promise<Decision> {
    this.recent.push(window, embedding);
    if (this.recent.seen < this.recluster.minWindows) return this.recent.decided(this.warm.add(embedding));
    if (this.current !== undefined && (this.recent.seen - this.recluster.minWindows) % this.recluster.every !== 0) return this.recent.decided(this.nearest(embedding));
    return this.recent.decideWith(this.clusterer(this.recent.windows), (c) => this.nearestAfter(c, embedding));
  }

  /** A window's probabilities from the current clustering (before the first: the one-at-a-time speakers), deciding nothing. */
  score(embedding: Float64Array): number[] | undefined {
    return this.current ? this.nearest(embedding).probs : this.warm.score(embedding);
  }

  /** Takes a new clustering, its clusters mapped one-to-one onto the ids given; then the window's nearest centroid. */
  private nearestAfter(c: CountedClusters, embedding: Float64Array): Decision {
    this.current = { mapping: overlapMapping(c.past, this.recent.ids, c.centroids.length, this.speakers), centroids: c.centroids, mean: c.mean };
    return this.nearest(embedding);
  }

  /** The id of the window's nearest centroid. */
  private nearest(embedding: Float64Array): Decision {
    const { mapping, centroids, mean } = this.current!;
    const e = centredOn(embedding, mean);
    const sims = centroids.map((c) => dot(c, e));
    const probs = new Array<number>(this.speakers).fill(0);
    softmax(sims.map((s) => this.params.temperature * s)).forEach((p, a) => (probs[mapping[a]!] = p));
    return { speaker: mapping[argmax(sims)]!, probs };
  }
}
