/**
 * Diarization error rate, as NIST md-eval scores it: on a 10 ms grid, outside a collar around
 * every reference boundary, (missed + false alarm + speaker confusion) / reference speech time,
 * overlapping reference speech counted once per speaker, with the one-to-one mapping of
 * hypothesis to reference speakers that maximises their common time (Hungarian algorithm).
 */

export interface Turn {
  speaker: string;
  /** Seconds. */
  start: number;
  end: number;
}

export interface DerResult {
  der: number;
  missed: number;
  falseAlarm: number;
  confusion: number;
  /** Scored reference speech, seconds (overlap counted per speaker). */
  scored: number;
  refSpeakers: number;
  hypSpeakers: number;
}

const FRAME_S = 0.01;

/** Maximum-weight one-to-one assignment rows -> columns (Hungarian, O(n^3)); -1 = unassigned row. */
export function maxAssignment(weights: readonly (readonly number[])[]): number[] {
  const rows = weights.length;
  const cols = rows > 0 ? weights[0]!.length : 0;
  const n = Math.max(rows, cols);
  if (n === 0) return [];
  let max = 0;
  for (const r of weights) for (const w of r) max = Math.max(max, w);
  // minimise cost = max - weight on an n x n square (padding weight 0)
  const cost = (i: number, j: number): number => max - (i < rows && j < cols ? weights[i]![j]! : 0);
  const u = new Float64Array(n + 1);
  const v = new Float64Array(n + 1);
  const p = new Int32Array(n + 1);
  const way = new Int32Array(n + 1);
  for (let i = 1; i <= n; i++) {
    p[0] = i;
    let j0 = 0;
    const minv = new Float64Array(n + 1).fill(Infinity);
    const used = new Uint8Array(n + 1);
    do {
      used[j0] = 1;
      const i0 = p[0 + j0]!;
      let delta = Infinity;
      let j1 = 0;
      for (let j = 1; j <= n; j++) {
        if (used[j]) continue;
        const cur = cost(i0 - 1, j - 1) - u[i0]! - v[j]!;
        if (cur < minv[j]!) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j]! < delta) {
          delta = minv[j]!;
          j1 = j;
        }
      }
      for (let j = 0; j <= n; j++) {
        if (used[j]) {
          u[p[j]!]! += delta;
          v[j]! -= delta;
        } else {
          minv[j]! -= delta;
        }
      }
      j0 = j1;
    } while (p[j0] !== 0);
    do {
      const j1 = way[j0]!;
      p[j0] = p[j1]!;
      j0 = j1;
    } while (j0 !== 0);
  }
  const out = new Array<number>(rows).fill(-1);
  for (let j = 1; j <= n; j++) if (p[j]! - 1 < rows && j - 1 < cols) out[p[j]! - 1] = j - 1;
  return out;
}

/** DER of `hyp` against `ref` over [0, durationS), with `collarS` either side of each reference boundary left out. */
export function diarizationError(ref: readonly Turn[], hyp: readonly Turn[], durationS: number, collarS = 0.25): DerResult {
  const frames = Math.ceil(durationS / FRAME_S);
  const refNames = [...new Set(ref.map((t) => t.speaker))];
  const hypNames = [...new Set(hyp.map((t) => t.speaker))];
  const frameOf = (s: number): number => Math.max(0, Math.min(frames, Math.round(s / FRAME_S)));
  const fill = (turns: readonly Turn[], names: string[]): Uint8Array[] => {
    const m = names.map(() => new Uint8Array(frames));
    for (const t of turns) m[names.indexOf(t.speaker)]!.fill(1, frameOf(t.start), frameOf(t.end));
    return m;
  };
  const R = fill(ref, refNames);
  const H = fill(hyp, hypNames);
  const scored = new Uint8Array(frames).fill(1);
  for (const t of ref) {
    for (const b of [t.start, t.end]) scored.fill(0, frameOf(b - collarS), frameOf(b + collarS));
  }
  // common scored time of each reference and hypothesis speaker
  const common = refNames.map((_, r) => hypNames.map((_, h) => {
    let n = 0;
    for (let f = 0; f < frames; f++) if (scored[f] && R[r]![f] && H[h]![f]) n++;
    return n;
  }));
  const map = maxAssignment(common); // ref r -> hyp map[r]
  let missed = 0;
  let falseAlarm = 0;
  let confusion = 0;
  let total = 0;
  for (let f = 0; f < frames; f++) {
    if (!scored[f]) continue;
    let nRef = 0;
    let nHyp = 0;
    let correct = 0;
    for (let r = 0; r < R.length; r++) {
      if (!R[r]![f]) continue;
      nRef++;
      const h = map[r]!;
      if (h >= 0 && H[h]![f]) correct++;
    }
    for (let h = 0; h < H.length; h++) if (H[h]![f]) nHyp++;
    total += nRef;
    missed += Math.max(0, nRef - nHyp);
    falseAlarm += Math.max(0, nHyp - nRef);
    confusion += Math.min(nRef, nHyp) - correct;
  }
  const s = FRAME_S;
  return {
    der: total > 0 ? (missed + falseAlarm + confusion) / total : 0,
    missed: missed * s,
    falseAlarm: falseAlarm * s,
    confusion: confusion * s,
    scored: total * s,
    refSpeakers: refNames.length,
    hypSpeakers: hypNames.length,
  };
}

/**
 * The speaker turns of a model's time series (labels other than speaker_<n> are not speech).
 * `bridgeS` > 0: a speaker's turn also goes on across a gap of silence or no_speech shorter than
 * this (the rule the simulated conversations' references follow: pauses under 0.3 s bridged).
 */
export function turnsOfSteps(labels: readonly string[], periodMs: number, durationS: number, bridgeS = 0): Turn[] {
  const out: Turn[] = [];
  for (let k = 0; k < labels.length; k++) {
    const l = labels[k]!;
    if (!/^speaker_\d+$/.test(l)) continue;
    const start = (k * periodMs) / 1000;
    const end = Math.min(durationS, ((k + 1) * periodMs) / 1000);
    const last = out[out.length - 1];
    if (last && last.speaker === l && start - last.end < Math.max(bridgeS, 0) + 1e-9) last.end = end;
    else out.push({ speaker: l, start, end });
  }
  return out;
}
