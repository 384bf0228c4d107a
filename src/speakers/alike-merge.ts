/**
 * Files, after clusterWindows: speakers a learnt pair rule calls one voice are one (speakers 1.6.0;
 * 1.5.0 merged on one cosine and a bar). Since 1.7.0 the same rule also works the other way inside
 * the clustering: two long clusters it calls two voices are not merged there (keepApartBy).
 *
 * The clustering compares centred windows (the recording's mean taken away, file-map.ts), which
 * sometimes splits one voice in two when its windows drift with the words, the emotion or the line.
 * The same windows uncentred and whitened (whitening.ts, the matrix learnt from 217 other voices)
 * weigh the directions that tell voices apart and see most such halves as one voice. The rule is a
 * logistic regression over each pair's PAIR_FEATURES, fitted on pairs of speakers found in the
 * tuning conversations (training/diarization/merge_rule.py; models/speakers/MODEL_CARD.md).
 * training/diarization/cluster.py `merge_alike` is the same arithmetic.
 */
import { centroidOf, dot, normalise, type KeepApart, type PairSide } from './clustering';
import { whiten, type Whitening } from './whitening';

/** The rule's features, in the order its weighted sum adds them (cluster.py PAIR_FEATURES). */
export const PAIR_FEATURES = ['whitened_cosine', 'centred_cosine', 'log_fewer_windows', 'log_more_windows'] as const;

/** Manifest "speaker_map.alike_merge": one voice when bias + weights . features >= minLogit. */
export interface AlikeMergeRule {
  bias: number;
  /** One per PAIR_FEATURES name, in that order. */
  weights: readonly number[];
  /** log(p / (1 - p)) of the manifest's min_probability p. */
  minLogit: number;
  /**
   * Sizes count up to this many windows: the most any speaker had in the 1-2.5 minute conversations
   * the rule was fitted on, so a longer file's sizes are not extrapolated (only its most alike pairs merge).
   */
  maxWindows: number;
  /**
   * log(p / (1 - p)) of the manifest's keep_apart_below p (since speakers 1.7.0; absent: no such rule):
   * the agglomeration does not merge two long clusters whose logit is under it.
   */
  apartLogit?: number;
  /**
   * Since speakers 1.9.2 (needs apartLogit): a short cluster of at least minS seconds of window hops
   * whose logit with every speaker is under belowLogit (log(p / (1 - p)) of the manifest's
   * short_speaker_below p) is a speaker too, instead of joining the closest (clustering.ts chooseSpeakers).
   */
  shortSpeaker?: { minS: number; belowLogit: number };
}

interface Speaker {
  whitened: Float64Array;
  compared: Float64Array;
  windows: number;
}

/** PAIR_FEATURES of two unit whitened centroids, the cosine of the compared ones and the sizes. */
function features(wa: Float64Array, wb: Float64Array, comparedCosine: number, windowsA: number, windowsB: number, maxWindows: number): number[] {
  const [na, nb] = [Math.min(windowsA, maxWindows), Math.min(windowsB, maxWindows)];
  return [dot(wa, wb), comparedCosine, Math.log(Math.min(na, nb)), Math.log(Math.max(na, nb))];
}

/** A pair's PAIR_FEATURES. */
function pairFeatures(a: Speaker, b: Speaker, maxWindows: number): number[] {
  return features(a.whitened, b.whitened, dot(a.compared, b.compared), a.windows, b.windows, maxWindows);
}

function logitOf(rule: AlikeMergeRule, features: readonly number[]): number {
  let z = rule.bias;
  features.forEach((f, i) => (z += rule.weights[i]! * f));
  return z;
}

function isOneVoice(rule: AlikeMergeRule, features: readonly number[]): boolean {
  return logitOf(rule, features) >= rule.minLogit;
}

/**
 * The rule as clusterWindows' KeepApart (undefined when it has no keep_apart_below): each window's view
 * is its embedding (`plain`: unit, uncentred, in clusterWindows' order) whitened, computed once as the
 * segments form, so no whitened copy of an hour's windows is kept; a caller that keeps them anyway (a
 * stream's recent windows, as it compares them) passes them as `whitened` (whiten(m, plain[i]) each).
 */
export function keepApartBy(rule: AlikeMergeRule, m: Whitening, plain: readonly Float64Array[], whitened?: readonly Float64Array[]): KeepApart | undefined {
  const bar = rule.apartLogit;
  if (bar === undefined) return undefined;
  const scratch = new Float64Array(m.length);
  const logit = (a: PairSide, b: PairSide): number => logitOf(rule, features(a.view, b.view, a.comparedCosine, a.windows, b.windows, rule.maxWindows));
  const short = rule.shortSpeaker;
  return {
    view: (i) => whitened?.[i] ?? whiten(m, plain[i]!, scratch),
    twoVoices: (a, b) => logit(a, b) < bar,
    ...(short ? { shortSpeaker: { minS: short.minS, distinct: (a: PairSide, b: PairSide) => logit(a, b) < short.belowLogit } } : {}),
  };
}

/**
 * `assignment`: each clustered window's speaker (0..speakers-1, every speaker with a window);
 * `plain`: those windows' unit embeddings, uncentred; `compared`: the same windows as clustered;
 * `whitened`, where the caller keeps them: whiten(m, plain[i]) each.
 * Speakers the rule calls one voice, directly or through another speaker, become one. Returns
 * the speakers' centroids over `compared`, ordered by first window.
 */
export function mergeAlike(
  assignment: readonly number[],
  speakers: number,
  plain: readonly Float64Array[],
  compared: readonly Float64Array[],
  m: Whitening,
  rule: AlikeMergeRule,
  whitened?: readonly Float64Array[],
): Float64Array[] {
  const members = Array.from({ length: speakers }, () => [] as number[]);
  const sums = Array.from({ length: speakers }, () => new Float64Array(m.length));
  const scratch = new Float64Array(m.length);
  assignment.forEach((k, i) => {
    members[k]!.push(i);
    const w = whitened?.[i] ?? whiten(m, plain[i]!, scratch); // one at a time: no whitened copy of an hour's windows
    for (let d = 0; d < w.length; d++) sums[k]![d]! += w[d]!;
  });
  const found: Speaker[] = members.map((ms, k) => ({ whitened: normalise(sums[k]!), compared: centroidOf(ms, compared), windows: ms.length }));
  const root = members.map((_, k) => k);
  const find = (k: number): number => (root[k] === k ? k : find(root[k]!));
  for (let a = 0; a < speakers; a++) {
    for (let b = a + 1; b < speakers; b++) {
      if (!isOneVoice(rule, pairFeatures(found[a]!, found[b]!, rule.maxWindows))) continue;
      const [ra, rb] = [find(a), find(b)];
      root[Math.max(ra, rb)] = Math.min(ra, rb);
    }
  }
  const groups = new Map<number, number[]>();
  members.forEach((ms, k) => {
    const r = find(k);
    groups.set(r, (groups.get(r) ?? []).concat(ms));
  });
  return [...groups.values()]
    .map((ms) => ms.sort((x, y) => x - y))
    .sort((x, y) => x[0]! - y[0]!)
    .map((ms) => centroidOf(ms, compared));
}
