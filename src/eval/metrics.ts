/**
 * Classification metrics for `auris eval`: confusion matrix, accuracy, per-class
 * precision / recall / F1, unweighted average recall (balanced accuracy) and binary F1.
 * Pure code, no I/O.
 */

export interface ClassScores {
  label: string;
  /** Number of true items of this class (row sum). */
  support: number;
  /** Number of items predicted as this class (column sum). */
  predicted: number;
  precision: number;
  recall: number;
  f1: number;
}

/**
 * A confusion matrix over a fixed, ordered label set. `counts[t][p]` is the number of
 * items whose true label is labels[t] and whose prediction is labels[p].
 */
export class ConfusionMatrix {
  readonly labels: readonly string[];
  readonly counts: number[][];
  private readonly index = new Map<string, number>();

  constructor(labels: readonly string[]) {
    if (labels.length === 0) throw new Error('ConfusionMatrix needs at least one label');
    this.labels = [...labels];
    this.labels.forEach((l, i) => {
      if (this.index.has(l)) throw new Error(`duplicate label "${l}"`);
      this.index.set(l, i);
    });
    this.counts = this.labels.map(() => this.labels.map(() => 0));
  }

  /** Adds `n` (default 1) items with true label `truth` predicted as `pred`. */
  add(truth: string, pred: string, n = 1): void {
    const t = this.index.get(truth);
    const p = this.index.get(pred);
    if (t === undefined) throw new Error(`unknown true label "${truth}" (labels: ${this.labels.join(', ')})`);
    if (p === undefined) throw new Error(`unknown predicted label "${pred}" (labels: ${this.labels.join(', ')})`);
    this.counts[t][p] += n;
  }

  /** Adds every cell of another matrix over the same labels. */
  merge(other: ConfusionMatrix): void {
    if (other.labels.join('\u0000') !== this.labels.join('\u0000')) {
      throw new Error('cannot merge confusion matrices over different labels');
    }
    for (let t = 0; t < this.labels.length; t++) {
      for (let p = 0; p < this.labels.length; p++) this.counts[t][p] += other.counts[t][p];
    }
  }

  get total(): number {
    let n = 0;
    for (const row of this.counts) for (const c of row) n += c;
    return n;
  }

  get correct(): number {
    let n = 0;
    for (let i = 0; i < this.labels.length; i++) n += this.counts[i][i];
    return n;
  }

  /** Fraction of items predicted correctly; NaN when empty. */
  accuracy(): number {
    const total = this.total;
    return total === 0 ? NaN : this.correct / total;
  }

  /** Precision, recall and F1 of every label (NaN where undefined: 0/0). */
  perClass(): ClassScores[] {
    return this.labels.map((label, i) => {
      let support = 0;
      let predicted = 0;
      for (let j = 0; j < this.labels.length; j++) {
        support += this.counts[i][j];
        predicted += this.counts[j][i];
      }
      const tp = this.counts[i][i];
      return { label, support, predicted, ...prf(tp, predicted - tp, support - tp) };
    });
  }

  /**
   * Unweighted average recall (balanced accuracy): the mean of the recalls of the labels
   * that have true items. Labels absent from the truth are left out (their recall is
   * undefined); NaN when the matrix is empty.
   */
  uar(): number {
    const recalls = this.perClass().filter((c) => c.support > 0).map((c) => c.recall);
    return recalls.length === 0 ? NaN : recalls.reduce((a, b) => a + b, 0) / recalls.length;
  }

  /** Mean F1 over the labels that occur in the truth or the predictions. */
  macroF1(): number {
    const f1s = this.perClass()
      .filter((c) => c.support > 0 || c.predicted > 0)
      .map((c) => (Number.isNaN(c.f1) ? 0 : c.f1));
    return f1s.length === 0 ? NaN : f1s.reduce((a, b) => a + b, 0) / f1s.length;
  }

  /** Plain-text table: rows = truth, columns = prediction. */
  format(): string {
    const head = ['true \\ pred', ...this.labels];
    const rows = this.labels.map((l, i) => [l, ...this.counts[i].map(String)]);
    const all = [head, ...rows];
    const widths = head.map((_, c) => Math.max(...all.map((r) => r[c].length)));
    return all.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ')).join('\n');
  }

  toJSON(): { labels: string[]; counts: number[][] } {
    return { labels: [...this.labels], counts: this.counts.map((r) => [...r]) };
  }
}

/** Precision, recall and F1 from true positives, false positives and false negatives. */
export function prf(tp: number, fp: number, fn: number): { precision: number; recall: number; f1: number } {
  const precision = tp + fp === 0 ? NaN : tp / (tp + fp);
  const recall = tp + fn === 0 ? NaN : tp / (tp + fn);
  // F1 = 2 tp / (2 tp + fp + fn): defined (0) even when precision is 0/0 but there are misses.
  const denom = 2 * tp + fp + fn;
  const f1 = denom === 0 ? NaN : (2 * tp) / denom;
  return { precision, recall, f1 };
}

/** Counts for a binary detector (positive = e.g. speech). */
export class BinaryCounts {
  tp = 0;
  fp = 0;
  fn = 0;
  tn = 0;

  add(truth: boolean, pred: boolean): void {
    if (truth && pred) this.tp++;
    else if (!truth && pred) this.fp++;
    else if (truth && !pred) this.fn++;
    else this.tn++;
  }

  get total(): number {
    return this.tp + this.fp + this.fn + this.tn;
  }

  scores(): { precision: number; recall: number; f1: number; accuracy: number } {
    const total = this.total;
    return { ...prf(this.tp, this.fp, this.fn), accuracy: total === 0 ? NaN : (this.tp + this.tn) / total };
  }

  toJSON(): { tp: number; fp: number; fn: number; tn: number; precision: number; recall: number; f1: number; accuracy: number } {
    return { tp: this.tp, fp: this.fp, fn: this.fn, tn: this.tn, ...this.scores() };
  }
}

/** Index of the largest value (first one on ties). */
export function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
  return best;
}

/** Most frequent label (ties: the one that comes first in `order`). */
export function majority(labels: readonly string[], order: readonly string[]): string | undefined {
  if (labels.length === 0) return undefined;
  const counts = new Map<string, number>();
  for (const l of labels) counts.set(l, (counts.get(l) ?? 0) + 1);
  let best: string | undefined;
  let bestCount = -1;
  for (const l of order) {
    const c = counts.get(l) ?? 0;
    if (c > bestCount) {
      best = l;
      bestCount = c;
    }
  }
  return best;
}

/** Formats a fraction in [0, 1] as a percentage with one decimal ('n/a' for NaN). */
export function pct(x: number): string {
  return Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : 'n/a';
}
