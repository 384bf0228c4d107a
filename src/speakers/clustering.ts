/**
 * The speaker map's arithmetic (model `speakers`, docs/speakers.md): speaker-encoder embeddings of
 * overlapping windows -> speakers. Pure functions, no I/O; training/diarization/cluster.py is the
 * same algorithm in Python (the golden test holds the two together).
 *
 *  - clusterWindows: a whole file's windows, offline: segments of similar consecutive windows,
 *    centroid-linkage agglomeration down to a similarity threshold; the clusters long enough to be a
 *    speaker are the speakers (merged further to the caller's count or under the cap), the short
 *    ones (a cough, a laugh, a window across a turn) join the closest speaker, unless (since speakers
 *    1.9.2, no count) the pair rule is sure one is another voice; then a few re-assignment passes.
 *  - OnlineSpeakers: a live stream's windows one at a time, each either joining the closest known
 *    speaker or starting the next one (a speaker once numbered keeps its number).
 *  - stepProbabilities: per 64 ms step, the mean of the probability vectors of the windows covering it.
 */
import { argmax } from '../analysis/postprocess';

/** Tunables of the speaker map (models/speakers/manifest.json "speaker_map"). */
export interface SpeakerMapParams {
  /** Windows start every hopSteps steps. */
  hopSteps: number;
  /** Steps per window (the encoder's). */
  windowSteps: number;
  /** Consecutive windows at least this similar (cosine) form one segment. */
  segmentThreshold: number;
  /** Clusters are merged while their centroids are at least this similar. */
  mergeThreshold: number;
  /** Re-assignment passes after merging. */
  refineIterations: number;
  /** Clusters covering less than this (seconds of window hops) are no speaker (files)... */
  minSpeakerS: number;
  /** ...nor less than this share of the clustered windows, if that is shorter (a short call). */
  minSpeakerShare: number;
  /** Softmax scale on cosine similarities. */
  temperature: number;
  /** A stream's window joins a known speaker at this similarity or more (with one speaker known; see the next)... */
  onlineThreshold: number;
  /**
   * ...lowered by this per speaker beyond the first: each further speaker needs a window further from
   * all the known ones to open (streams opened too many speakers at one fixed threshold).
   */
  onlineThresholdStep: number;
}

/** Seconds per 64 ms step. */
const STEP_S = 0.064;

/**
 * v at unit length (zeros stay zeros), written into `out`: a new array unless given (it may be v itself).
 * The clustering passes scratch arrays where a vector is used once: a new Float64Array per window and per
 * use is an off-heap buffer freed only at a later collection (an hour's clustering peaked ~8 MiB higher with them).
 */
export function normalise(v: Float32Array | Float64Array, out: Float64Array = new Float64Array(v.length)): Float64Array {
  let n = 0;
  for (let i = 0; i < v.length; i++) n += v[i]! * v[i]!;
  const s = n > 0 ? 1 / Math.sqrt(n) : 0;
  for (let i = 0; i < v.length; i++) out[i] = v[i]! * s;
  return out;
}

/** The mean of the windows' embeddings (each added as e / n, in order: cluster.py sums the same way). */
export function meanEmbedding(windows: readonly EmbeddedWindow[]): Float64Array {
  const mean = new Float64Array(windows[0]!.embedding.length);
  for (const w of windows) for (let d = 0; d < mean.length; d++) mean[d]! += w.embedding[d]! / windows.length;
  return mean;
}

/** e - mean, unit length again: the recording's (or the recent windows') shared part taken away (into `out`, a new array unless given). */
export function centredOn(e: Float64Array, mean: Float64Array, out: Float64Array = new Float64Array(e.length)): Float64Array {
  for (let d = 0; d < e.length; d++) out[d] = e[d]! - mean[d]!;
  return normalise(out, out);
}

export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/**
 * out[j] = dot(e, rows[j]) for the first `count` rows, each summed left to right as dot() does (bit for bit
 * the same): four at a time, so four independent sums keep the core busy instead of one waiting on each add.
 */
export function dotsInto(e: Float64Array, rows: readonly Float64Array[], count: number, out: Float64Array): void {
  const d = e.length;
  let j = 0;
  for (; j + 3 < count; j += 4) {
    const r0 = rows[j]!, r1 = rows[j + 1]!, r2 = rows[j + 2]!, r3 = rows[j + 3]!;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (let i = 0; i < d; i++) {
      const x = e[i]!;
      s0 += x * r0[i]!;
      s1 += x * r1[i]!;
      s2 += x * r2[i]!;
      s3 += x * r3[i]!;
    }
    out[j] = s0;
    out[j + 1] = s1;
    out[j + 2] = s2;
    out[j + 3] = s3;
  }
  for (; j < count; j++) out[j] = dot(e, rows[j]!);
}

export function softmax(scaled: readonly number[]): number[] {
  if (scaled.length === 0) return [];
  const m = Math.max(...scaled);
  const e = scaled.map((x) => Math.exp(x - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}

interface Cluster {
  members: number[];
  sum: Float64Array;
  centroid: Float64Array;
  /** The sum of the members' second views (KeepApart; a merge adds the two sums). */
  viewSum?: Float64Array;
  /** Clusters this one must not merge with while both stay as they are (KeepApart said so). */
  apartFrom?: Set<Cluster>;
}

/**
 * Files without a count (speakers 1.7.0): the agglomeration does not merge two clusters that are each
 * long enough to be a speaker when a second view of their windows calls them two voices
 * (alike-merge.ts builds it from the learnt pair rule). The pair is skipped until either cluster changes.
 */
export interface KeepApart {
  /** Window i's second view (i indexes clusterWindows' windows); asked once per window, used before the next call (it may reuse the array). */
  view(i: number): Float64Array;
  /** Two clusters' unit view centroids, their clustered centroids' cosine and sizes (windows): two voices? */
  twoVoices(a: PairSide, b: PairSide): boolean;
  /**
   * Since speakers 1.9.2: a short cluster of at least minS seconds (window hops) that is `distinct` from
   * every speaker (and from every such cluster before it) is a speaker too (chooseSpeakers).
   */
  shortSpeaker?: { minS: number; distinct(a: PairSide, b: PairSide): boolean };
}

export interface PairSide {
  view: Float64Array;
  comparedCosine: number;
  windows: number;
}

/** The unit mean of the members' rows of `emb`, summed in the members' order (cluster.py `_Cluster` does the same sums). */
export function centroidOf(members: readonly number[], emb: readonly Float64Array[]): Float64Array {
  return clusterOf([...members], emb).centroid;
}

function clusterOf(members: number[], emb: readonly Float64Array[]): Cluster {
  const dim = emb[0]!.length;
  const sum = new Float64Array(dim);
  for (const m of members) {
    const e = emb[m]!;
    for (let i = 0; i < dim; i++) sum[i]! += e[i]!;
  }
  return { members, sum, centroid: normalise(sum) };
}

/** A stream's window given a speaker: its id and the probabilities over the ids. */
export interface Decision {
  speaker: number;
  probs: number[];
}

/** One embedded window of a channel: its index j (steps [jH, jH + W)) and unit embedding. */
export interface EmbeddedWindow {
  window: number;
  embedding: Float64Array;
}

export interface FileClustering {
  /** Number of speakers found (0 when no window was embedded). */
  speakers: number;
  /** Speaker (0-based, numbered by first appearance) of each embedded window, in input order. */
  assignment: number[];
  /** Unit centroids, in speaker order. */
  centroids: Float64Array[];
}

/**
 * Offline clustering of a channel's embedded windows (in window order). `numSpeakers`: the caller's
 * count (exact, unless fewer windows); else the count follows from the thresholds, at most `maxSpeakers`.
 */
export function clusterWindows(
  windows: readonly EmbeddedWindow[],
  p: SpeakerMapParams,
  maxSpeakers: number,
  numSpeakers?: number,
  keepApart?: KeepApart,
): FileClustering {
  if (windows.length === 0) return { speakers: 0, assignment: [], centroids: [] };
  const c = new Clusterer(windows.map((w) => w.embedding), p, numSpeakers === undefined ? keepApart : undefined);
  const segments = c.segments(windows); // agglomerate() merges in the list it is given: each pass gets a copy
  let chosen: Cluster[] | undefined;
  if (numSpeakers !== undefined) {
    // the count given: the free clustering merged down to it, when it found at least that many speakers (held-out
    // DER with the count given 14.4 -> 13.0 %, models/speakers/MODEL_CARD.md); else merges that stop at the count
    const free = c.chooseSpeakers(c.agglomerate([...segments], undefined), numSpeakers, undefined);
    if (free.length >= numSpeakers) chosen = free;
  }
  chosen ??= c.chooseSpeakers(c.agglomerate([...segments], numSpeakers), maxSpeakers, numSpeakers);
  const speakers = c.refine(chosen);
  return numberByFirstAppearance(speakers, windows.length);
}

/** The steps of clusterWindows over one channel's embeddings (indexes into `emb`). */
class Clusterer {
  private readonly hopS: number;
  private readonly minSpeakerS: number;

  constructor(
    private readonly emb: readonly Float64Array[],
    private readonly p: SpeakerMapParams,
    private readonly keepApart?: KeepApart,
  ) {
    this.hopS = p.hopSteps * STEP_S;
    this.minSpeakerS = Math.min(p.minSpeakerS, p.minSpeakerShare * emb.length * this.hopS);
  }

  /** Long enough to be a speaker (min_speaker_s of window hops, or min_speaker_share of them all). */
  isLong(c: Cluster): boolean {
    return c.members.length * this.hopS >= this.minSpeakerS;
  }

  /** a. Runs of consecutive windows each similar enough to the run so far. */
  segments(windows: readonly EmbeddedWindow[]): Cluster[] {
    const out: number[][] = [];
    let cur: number[] = [];
    let sum = new Float64Array(0);
    const unit = new Float64Array(this.emb[0]?.length ?? 0); // the run's normalised sum, one scratch for all windows
    windows.forEach((w, i) => {
      const e = this.emb[i]!;
      const joins = cur.length > 0 && w.window === windows[i - 1]!.window + 1 && dot(e, normalise(sum, unit)) >= this.p.segmentThreshold;
      if (!joins) {
        if (cur.length > 0) out.push(cur);
        cur = [];
        sum = new Float64Array(e.length);
      }
      cur.push(i);
      for (let d = 0; d < sum.length; d++) sum[d]! += e[d]!;
    });
    out.push(cur);
    return out.map((m) => {
      const c = clusterOf(m, this.emb);
      if (this.keepApart) {
        let viewSum: Float64Array | undefined;
        for (const i of m) {
          const v = this.keepApart.view(i);
          viewSum ??= new Float64Array(v.length);
          for (let d = 0; d < viewSum.length; d++) viewSum[d]! += v[d]!;
        }
        c.viewSum = viewSum;
      }
      return c;
    });
  }

  /**
   * b. Centroid-linkage agglomeration: down to the merge threshold, or (the caller's count) until the
   * next merge would leave fewer clusters long enough to be a speaker than that count.
   */
  agglomerate(clusters: Cluster[], numSpeakers: number | undefined): Cluster[] {
    if (numSpeakers === undefined) this.mergeClosest(clusters, (best) => best >= this.p.mergeThreshold, this.keepApart && ((best, a, b) => this.apart(best, a, b)));
    else {
      const enoughLong = (): boolean => clusters.filter((c) => this.isLong(c)).length > numSpeakers;
      this.mergeClosest(clusters, (_best, a, b) => clusters.length > numSpeakers && (!(this.isLong(a) && this.isLong(b)) || enoughLong()));
    }
    return clusters;
  }

  /**
   * c. The speakers are the clusters long enough to be one (the longest, if none is; the longest few
   * up to the caller's count), merged to that count or under the cap; the short clusters' windows
   * (a cough, a window across a turn) join the closest speaker.
   */
  chooseSpeakers(clusters: Cluster[], maxSpeakers: number, numSpeakers: number | undefined): Cluster[] {
    const byLength = clusters.map((c, k) => ({ c, k })).sort((x, y) => y.c.members.length - x.c.members.length || x.k - y.k);
    const wanted = numSpeakers ?? 0;
    const keep = new Set(byLength.filter(({ c }, i) => i === 0 || this.isLong(c) || i < wanted).map(({ k }) => k));
    if (numSpeakers === undefined) for (const k of this.distinctShort(clusters, keep)) keep.add(k);
    const speakers = clusters.filter((_, k) => keep.has(k));
    const short = clusters.filter((_, k) => !keep.has(k));
    this.mergeClosest(speakers, () => speakers.length > (numSpeakers ?? maxSpeakers));
    if (short.length === 0) return speakers;
    const members = speakers.map((c) => [...c.members]);
    for (const c of short) for (const i of c.members) members[this.nearest(i, speakers)]!.push(i);
    return members.map((m) => clusterOf(m.sort((a, b) => a - b), this.emb));
  }

  /**
   * c'. (speakers 1.9.2) The short clusters of at least KeepApart's shortSpeaker.minS that it calls
   * distinct from every speaker and from every such cluster taken before them (cluster order): a voice
   * heard for 2-5 s of a conversation is no longer folded into the closest speaker when the pair rule
   * is that sure it is another. Sides: the unit sum of the members' views (ascending), the cosine of
   * the two clustered centroids (cluster.py `distinct_short`).
   */
  private distinctShort(clusters: readonly Cluster[], keep: ReadonlySet<number>): number[] {
    const rule = this.keepApart?.shortSpeaker;
    if (!rule) return [];
    const side = (c: Cluster): { view: Float64Array; centroid: Float64Array; windows: number } => {
      let sum: Float64Array | undefined;
      for (const i of c.members) {
        const v = this.keepApart!.view(i);
        sum ??= new Float64Array(v.length);
        for (let d = 0; d < sum.length; d++) sum[d]! += v[d]!;
      }
      return { view: normalise(sum!), centroid: c.centroid, windows: c.members.length };
    };
    const candidates = clusters.map((_, k) => k).filter((k) => !keep.has(k) && clusters[k]!.members.length * this.hopS >= rule.minS);
    if (candidates.length === 0) return []; // most files: the speakers' views are not summed at all
    const taken = [...keep].sort((a, b) => a - b).map((k) => side(clusters[k]!));
    const out: number[] = [];
    candidates.forEach((k) => {
      const s = side(clusters[k]!);
      const apart = taken.every((t) => {
        const cosine = dot(s.centroid, t.centroid);
        return rule.distinct({ view: s.view, comparedCosine: cosine, windows: s.windows }, { view: t.view, comparedCosine: cosine, windows: t.windows });
      });
      if (!apart) return;
      out.push(k);
      taken.push(s);
    });
    return out;
  }

  /** d. Re-assignment passes: every window to its closest centroid (clusters left empty are dropped). */
  refine(speakers: Cluster[]): Cluster[] {
    for (let r = 0; r < this.p.refineIterations; r++) {
      const members: number[][] = speakers.map(() => []);
      for (let i = 0; i < this.emb.length; i++) members[this.nearest(i, speakers)]!.push(i);
      speakers = members.filter((m) => m.length > 0).map((m) => clusterOf(m, this.emb));
    }
    return speakers;
  }

  /** Two long clusters KeepApart calls two voices (clusters with a view sum only: the free agglomeration's). */
  private apart(comparedCosine: number, a: Cluster, b: Cluster): boolean {
    if (!this.keepApart || !a.viewSum || !b.viewSum || !(this.isLong(a) && this.isLong(b))) return false;
    const side = (c: Cluster): PairSide => ({ view: normalise(c.viewSum!), comparedCosine, windows: c.members.length });
    return this.keepApart.twoVoices(side(a), side(b));
  }

  /** a and b as one cluster (members sorted; view sums added, as cluster.py `_Cluster.merged`). */
  private merged(a: Cluster, b: Cluster): Cluster {
    const c = clusterOf([...a.members, ...b.members].sort((x, y) => x - y), this.emb);
    if (a.viewSum && b.viewSum) {
      c.viewSum = new Float64Array(a.viewSum.length);
      for (let d = 0; d < c.viewSum.length; d++) c.viewSum[d] = a.viewSum[d]! + b.viewSum[d]!;
    }
    return c;
  }

  private nearest(i: number, cs: readonly Cluster[]): number {
    return argmax(cs.map((c) => dot(this.emb[i]!, c.centroid)));
  }

  /**
   * Merges the most similar pair (ties: lowest indexes; the merged cluster takes the first one's place)
   * while `go` says so; a pair `apart` says to keep apart is skipped until either of the two changes.
   *
   * Each cluster a keeps its closest later cluster next[a] and that cosine sim[a] (Müllner's generic
   * algorithm, arXiv:1109.2378): sim[a] is always at least the true best of a's row, and exact[a] says
   * it is that best. A merge changes one centroid, so each earlier row takes one cosine with it; a row
   * whose partner changed or left keeps its old cosine as a bound and is rescanned only if it comes out
   * on top. Rescanning every such row at once (until 2026-11-29) grew as n^1.8 when most windows
   * were their own segment: one merged cluster is many rows' closest. The pairs merged, and their
   * order, are the same as an exact rescan's (cluster.py keeps the whole matrix).
   */
  private mergeClosest(list: Cluster[], go: (best: number, a: Cluster, b: Cluster) => boolean, apart?: (best: number, a: Cluster, b: Cluster) => boolean): void {
    const n = list.length;
    const slot = [...list]; // slots keep their order; a merged pair lives on in the first one's slot
    const alive = new Uint8Array(n).fill(1);
    const next = new Int32Array(n);
    const sim = new Float64Array(n);
    const exact = new Uint8Array(n);
    // cosines(c, from, to, skip): c against the live slots from..to-1 not in `skip`, in one go (dotsInto);
    // the j-th compared slot is at[j], its cosine cos[j]; returns how many were compared
    const at = new Int32Array(n);
    const rows: Float64Array[] = [];
    const cos = new Float64Array(n);
    const cosines = (c: Float64Array, from: number, to: number, skip?: Set<Cluster>): number => {
      let count = 0;
      for (let b = from; b < to; b++) {
        if (!alive[b] || skip?.has(slot[b]!)) continue;
        at[count] = b;
        rows[count++] = slot[b]!.centroid;
      }
      dotsInto(c, rows, count, cos);
      return count;
    };
    const scan = (a: number): void => {
      const count = cosines(slot[a]!.centroid, a + 1, n, slot[a]!.apartFrom);
      let best = -Infinity;
      let arg = -1;
      for (let j = 0; j < count; j++) if (cos[j]! > best) [best, arg] = [cos[j]!, at[j]!];
      next[a] = arg;
      sim[a] = best;
      exact[a] = 1;
    };
    for (let a = 0; a < n; a++) scan(a);
    while (list.length > 1) {
      let ba = -1;
      for (let a = 0; a < n; a++) if (alive[a] && (ba < 0 || sim[a]! > sim[ba]!)) ba = a;
      if (!exact[ba]) {
        scan(ba); // its bound came out on top: is the pair still this close?
        continue;
      }
      const bb = next[ba]!;
      if (bb < 0 || !go(sim[ba]!, slot[ba]!, slot[bb]!)) return; // bb < 0: every pair is kept apart
      if (apart?.(sim[ba]!, slot[ba]!, slot[bb]!)) {
        (slot[ba]!.apartFrom ??= new Set()).add(slot[bb]!);
        scan(ba);
        continue;
      }
      const merged = this.merged(slot[ba]!, slot[bb]!);
      list[list.indexOf(slot[ba]!)] = merged;
      list.splice(list.indexOf(slot[bb]!), 1);
      slot[ba] = merged;
      alive[bb] = 0;
      for (let a = ba + 1; a < n; a++) if (alive[a] && (next[a] === ba || next[a] === bb)) exact[a] = 0; // its partner left (ba is not a later cluster of a)
      const count = cosines(merged.centroid, 0, ba);
      for (let j = 0; j < count; j++) {
        const a = at[j]!;
        const s = cos[j]!;
        if (s > sim[a]!) [sim[a], next[a], exact[a]] = [s, ba, 1]; // above a bound of every other pair: the best
        else if (next[a] === ba || next[a] === bb) [next[a], exact[a]] = [ba, 0]; // the old cosine stays a bound
        else if (exact[a] && s === sim[a] && ba < next[a]!) next[a] = ba;
      }
      scan(ba);
    }
  }
}

/** e. Speakers numbered by their earliest window. */
function numberByFirstAppearance(clusters: readonly Cluster[], n: number): FileClustering {
  const first = clusters.map((c) => Math.min(...c.members));
  const order = clusters.map((_, k) => k).sort((a, b) => first[a]! - first[b]!);
  const assignment = new Array<number>(n);
  order.forEach((k, rank) => {
    for (const i of clusters[k]!.members) assignment[i] = rank;
  });
  return { speakers: clusters.length, assignment, centroids: order.map((k) => clusters[k]!.centroid) };
}

/** p_j = softmax(T * cos(e_j, c_k)) over the given centroids. */
export function windowProbabilities(embedding: Float64Array, centroids: readonly Float64Array[], temperature: number): number[] {
  return softmax(centroids.map((c) => temperature * dot(embedding, c)));
}

/**
 * A live stream's speakers: windows arrive in order and each is assigned at once; a speaker keeps
 * its number. `add` returns the window's probability vector over the speakers known after it.
 */
export class OnlineSpeakers {
  private readonly sums: Float64Array[] = [];
  private readonly centroids: Float64Array[] = [];

  constructor(
    private readonly params: SpeakerMapParams,
    readonly maxSpeakers: number,
  ) {}

  get count(): number {
    return this.centroids.length;
  }

  /** The cosine at which a window joins its closest known speaker (below it, a new speaker opens). */
  bar(): number {
    return this.params.onlineThreshold - this.params.onlineThresholdStep * Math.max(0, this.centroids.length - 1);
  }

  add(embedding: Float64Array): { speaker: number; probs: number[] } {
    const sims = this.centroids.map((c) => dot(embedding, c));
    let k: number;
    if (sims.length > 0 && (Math.max(...sims) >= this.bar() || sims.length >= this.maxSpeakers)) {
      k = argmax(sims);
      const s = this.sums[k]!;
      for (let i = 0; i < s.length; i++) s[i]! += embedding[i]!;
      this.centroids[k] = normalise(s);
    } else {
      k = this.centroids.length;
      this.sums.push(Float64Array.from(embedding));
      this.centroids.push(normalise(embedding));
    }
    return { speaker: k, probs: windowProbabilities(embedding, this.centroids, this.params.temperature) };
  }

  /** The window's probabilities over the speakers as they stand, changing none (undefined before the first). */
  score(embedding: Float64Array): number[] | undefined {
    return this.centroids.length > 0 ? windowProbabilities(embedding, this.centroids, this.params.temperature) : undefined;
  }
}

/**
 * Per-step probabilities, [steps][width] (width >= every vector's length; missing columns 0).
 * Step s: the mean of the vectors of the embedded windows covering it (jH <= s < jH + W); else the
 * latest embedded window starting at or before s; else (`lookAhead`, files) the first one after s;
 * else zeros.
 */
export function stepProbabilities(
  windows: readonly { window: number; probs: readonly number[] }[],
  steps: number,
  width: number,
  p: Pick<SpeakerMapParams, 'hopSteps' | 'windowSteps'>,
  lookAhead: boolean,
): Float32Array {
  const out = new Float32Array(steps * width);
  const H = p.hopSteps;
  const W = p.windowSteps;
  let w0 = 0; // first window that may still cover a step
  for (let s = 0; s < steps; s++) {
    while (w0 < windows.length && windows[w0]!.window * H + W <= s) w0++;
    let covering = 0;
    for (let i = w0; i < windows.length && windows[i]!.window * H <= s; i++) {
      const pr = windows[i]!.probs;
      for (let k = 0; k < pr.length; k++) out[s * width + k]! += pr[k]!;
      covering++;
    }
    if (covering > 0) {
      for (let k = 0; k < width; k++) out[s * width + k]! /= covering;
      continue;
    }
    // no covering window: w0 - 1 is the latest that started before s (all of windows[< w0] ended)
    const fallback = w0 > 0 ? windows[w0 - 1] : lookAhead ? windows[w0] : undefined;
    if (fallback) fallback.probs.forEach((v, k) => (out[s * width + k] = v));
  }
  return out;
}
