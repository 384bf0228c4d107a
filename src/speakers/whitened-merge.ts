/**
 * Files, after clusterWindows (speakers 1.5.0): speakers whose whitened centroids are alike are one.
 *
 * The clustering compares centred windows (the recording's mean taken away, file-map.ts), which
 * sometimes splits one voice in two when its windows drift with the words, the emotion or the line.
 * The same windows uncentred and whitened (whitening.ts, the matrix learnt from 217 other voices)
 * weigh the directions that tell voices apart, and see most such halves as one voice
 * (models/speakers/MODEL_CARD.md: held-out conversations of 2-4 speakers, DER 13.1 -> 11.8 %, count
 * right 46 -> 53 %; 5-6 speakers lose a point).
 * training/diarization/cluster.py `merge_alike` is the same arithmetic.
 */
import { centroidOf, dot, normalise } from './clustering';
import { whiten, type Whitening } from './whitening';

/**
 * `assignment`: each clustered window's speaker (0..speakers-1, every speaker with a window);
 * `plain`: those windows' unit embeddings, uncentred; `compared`: the same windows as clustered.
 * Speakers whose centroids of the whitened plain windows reach `bar`, directly or through another
 * speaker, become one. Returns the speakers' centroids over `compared`, ordered by first window.
 */
export function mergeAlike(
  assignment: readonly number[],
  speakers: number,
  plain: readonly Float64Array[],
  compared: readonly Float64Array[],
  m: Whitening,
  bar: number,
): Float64Array[] {
  const members = Array.from({ length: speakers }, () => [] as number[]);
  const sums = Array.from({ length: speakers }, () => new Float64Array(m.length));
  assignment.forEach((k, i) => {
    members[k]!.push(i);
    const w = whiten(m, plain[i]!); // one at a time: no whitened copy of an hour's windows
    for (let d = 0; d < w.length; d++) sums[k]![d]! += w[d]!;
  });
  const centroids = sums.map((s) => normalise(s));
  const root = members.map((_, k) => k);
  const find = (k: number): number => (root[k] === k ? k : find(root[k]!));
  for (let a = 0; a < speakers; a++) {
    for (let b = a + 1; b < speakers; b++) {
      if (dot(centroids[a]!, centroids[b]!) < bar) continue;
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
