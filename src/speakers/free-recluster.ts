/**
 * The speakers of a live stream given no count (speakers 1.8.0). One window at a time
 * (OnlineSpeakers) a stream opens a speaker for good on the first window that sounds different and
 * never revises what it has; a file job clusters all its windows at once and does better (held-out
 * conversations of 2-4 voices: 10.9 % DER against 16.8 %). So once `freeMinWindows` windows have
 * arrived, every `freeEvery` windows the stream's last `history` windows are clustered as a file's are
 * (free-clustering.ts), and the clusters are mapped onto the ids already sent (greedyMapping), so a
 * speaker keeps its number; each window then takes its nearest centroid's id. Before that the
 * stream has too little voice to cluster: OnlineSpeakers on the whitened windows, as before.
 * Steps already sent never change: only windows from now on follow the new clustering.
 * models/speakers/MODEL_CARD.md has the figures; training/diarization/cluster.py
 * free_recluster_assign is the Python twin (golden-tested).
 */
import { argmax } from '../analysis/postprocess';
import { centredOn, dot, OnlineSpeakers, softmax, type Decision, type EmbeddedWindow } from './clustering';
import { clusterFreely } from './free-clustering';
import type { SpeakerMapInfo } from './manifest';
import { RecentWindows } from './recent-windows';

/**
 * Cluster a -> speaker id: the (cluster, id) pair agreeing on the most past windows first (ties: the
 * lowest cluster, then the lowest id), each cluster and id used once; clusters agreeing with no id
 * left take new ids from `known` up, in cluster order, never past cap - 1.
 */
export function greedyMapping(assignment: readonly number[], ids: readonly number[], clusters: number, known: number, cap: number): number[] {
  const width = Math.max(known, 1);
  const agree = Array.from({ length: clusters }, () => new Array<number>(width).fill(0));
  for (let i = 0; i < assignment.length; i++) agree[assignment[i]!]![ids[i]!]! += 1;
  const out = new Array<number>(clusters).fill(-1);
  for (;;) {
    let [best, ba, bb] = [0, -1, -1];
    for (let a = 0; a < clusters; a++) {
      for (let b = 0; b < width; b++) {
        if (agree[a]![b]! > best) [best, ba, bb] = [agree[a]![b]!, a, b];
      }
    }
    if (ba < 0) break;
    out[ba] = bb;
    for (let b = 0; b < width; b++) agree[ba]![b] = 0;
    for (let a = 0; a < clusters; a++) agree[a]![bb] = 0;
  }
  let next = known;
  for (let a = 0; a < clusters; a++) if (out[a]! < 0) out[a] = Math.min(next++, cap - 1);
  return out;
}

/** A free clustering of a stream's kept windows: the centroids, the mean taken away, and each window but the newest's cluster. */
export interface FreeClusters {
  centroids: Float64Array[];
  mean: Float64Array;
  /** The cluster of each kept window but the newest (the one being decided), in window order. */
  past: number[];
}

/**
 * Clusters a stream's kept windows (the newest last) freely; `whitened`: the same windows as the
 * stream compares them, where the model whitens. A pure function of its inputs: the service runs
 * it on the clustering thread (clustering-thread.ts), tests and tools here.
 */
export function freeClusters(windows: readonly EmbeddedWindow[], map: SpeakerMapInfo, cap: number, whitened?: readonly Float64Array[]): FreeClusters {
  const { centroids, compared, mean } = clusterFreely(windows, map, cap, whitened);
  const past = compared.slice(0, -1).map((w) => argmax(centroids.map((c) => dot(c, w.embedding))));
  return { centroids, mean, past };
}

/** Runs freeClusters (here, or on another thread: then the answer is a promise). */
export type FreeClusterer = (windows: readonly EmbeddedWindow[], whitened: readonly Float64Array[] | undefined) => FreeClusters | Promise<FreeClusters>;

export class FreeReclusteringSpeakers {
  private readonly warm: OnlineSpeakers;
  private readonly recent: RecentWindows;
  private readonly clusterer: FreeClusterer;
  private current: { mapping: number[]; centroids: Float64Array[]; mean: Float64Array } | undefined;

  constructor(
    private readonly map: SpeakerMapInfo,
    /** The most speakers this stream is split into. */
    private readonly cap: number,
    /** Where the clustering runs (default: here, synchronously). */
    clusterer?: FreeClusterer,
  ) {
    this.warm = new OnlineSpeakers(map.params, cap);
    this.recent = new RecentWindows(map.recluster.history);
    this.clusterer = clusterer ?? ((windows, whitened) => freeClusters(windows, map, cap, whitened));
  }

  /** Speakers given an id so far. */
  get count(): number {
    return this.recent.used;
  }

  /**
   * The next embedded window (in window order): `compared` is its unit embedding as OnlineSpeakers
   * compares it (whitened), `plain` the unit embedding as the encoder gave it. Its speaker id and
   * probabilities over the ids; a promise when a clustering on another thread decides it (the
   * caller adds the next window only once it has the answer).
   */
  add(compared: Float64Array, window: number, plain: Float64Array): Decision | Promise<Decision> {
    const { freeEvery, freeMinWindows } = this.map.recluster;
    this.recent.push(window, plain, compared);
    if (this.recent.seen < freeMinWindows) return this.recent.decided(this.warm.add(compared));
    if (this.current !== undefined && (this.recent.seen - freeMinWindows) % freeEvery !== 0) return this.recent.decided(this.nearest(plain));
    // the compared windows are the whitened ones the pair rule reads, when the model whitens
    const found = this.clusterer(this.recent.windows, this.map.whitening ? this.recent.compared : undefined);
    return this.recent.decideWith(found, (c) => this.nearestAfter(c, plain));
  }

  /** A window's probabilities from the current clustering (before the first: the one-at-a-time speakers), deciding nothing. */
  score(compared: Float64Array, plain: Float64Array): number[] | undefined {
    return this.current ? this.nearest(plain).probs : this.warm.score(compared);
  }

  /** Takes a new clustering, its clusters mapped onto the ids given; then the window's nearest centroid. */
  private nearestAfter(c: FreeClusters, plain: Float64Array): Decision {
    const mapping = greedyMapping(c.past, this.recent.ids, c.centroids.length, this.recent.used, this.cap);
    this.current = { mapping, centroids: c.centroids, mean: c.mean };
    return this.nearest(plain);
  }

  /** The id of the nearest centroid (the window centred on the clustered windows' mean). */
  private nearest(plain: Float64Array): Decision {
    const { mapping, centroids, mean } = this.current!;
    const e = this.map.centre ? centredOn(plain, mean) : plain;
    const sims = centroids.map((c) => dot(c, e));
    const probs = new Array<number>(this.cap).fill(0);
    softmax(sims.map((s) => this.map.params.temperature * s)).forEach((p, a) => (probs[mapping[a]!]! += p));
    return { speaker: mapping[argmax(sims)]!, probs };
  }
}
