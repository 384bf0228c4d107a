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
import { centredOn, dot, OnlineSpeakers, softmax } from './clustering';
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

export class FreeReclusteringSpeakers {
  private readonly warm: OnlineSpeakers;
  private readonly recent: RecentWindows;
  private current: { mapping: number[]; centroids: Float64Array[]; mean: Float64Array } | undefined;

  constructor(
    private readonly map: SpeakerMapInfo,
    /** The most speakers this stream is split into. */
    private readonly cap: number,
  ) {
    this.warm = new OnlineSpeakers(map.params, cap);
    this.recent = new RecentWindows(map.recluster.history);
  }

  /** Speakers given an id so far. */
  get count(): number {
    return this.recent.used;
  }

  /**
   * The next embedded window (in window order): `compared` is its unit embedding as OnlineSpeakers
   * compares it (whitened), `plain` the unit embedding as the encoder gave it. Its speaker id and
   * probabilities over the ids.
   */
  add(compared: Float64Array, window: number, plain: Float64Array): { speaker: number; probs: number[] } {
    const { freeEvery, freeMinWindows } = this.map.recluster;
    this.recent.push(window, plain, compared);
    let out: { speaker: number; probs: number[] };
    if (this.recent.seen < freeMinWindows) out = this.warm.add(compared);
    else {
      if (this.current === undefined || (this.recent.seen - freeMinWindows) % freeEvery === 0) this.cluster();
      out = this.nearest(plain);
    }
    this.recent.decided(out.speaker);
    return out;
  }

  /** The id of the nearest centroid (the window centred on the clustered windows' mean). */
  private nearest(plain: Float64Array): { speaker: number; probs: number[] } {
    const { mapping, centroids, mean } = this.current!;
    const e = this.map.centre ? centredOn(plain, mean) : plain;
    const sims = centroids.map((c) => dot(c, e));
    const probs = new Array<number>(this.cap).fill(0);
    softmax(sims.map((s) => this.map.params.temperature * s)).forEach((p, a) => (probs[mapping[a]!]! += p));
    return { speaker: mapping[argmax(sims)]!, probs };
  }

  /** Clusters the kept windows (the newest included) freely, mapped onto the ids given. */
  private cluster(): void {
    // the compared windows are the whitened ones the pair rule reads, when the model whitens
    const { windows, ids, used } = this.recent;
    const { centroids, compared, mean } = clusterFreely(windows, this.map, this.cap, this.map.whitening ? this.recent.compared : undefined);
    const past = compared.slice(0, -1).map((w) => argmax(centroids.map((c) => dot(c, w.embedding))));
    this.current = { mapping: greedyMapping(past, ids, centroids.length, used, this.cap), centroids, mean };
  }
}
