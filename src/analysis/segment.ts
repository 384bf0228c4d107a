/**
 * Gender that holds inside a speech segment: the running mean of a speaker model's output-step
 * probabilities since the segment began. Causal (it never looks ahead), so a live stream decides
 * exactly as the file job does. Scored on the leave-one-corpus-out folds (training/validate/segment_consistency.py):
 * step accuracy rises (BAVED 0.922 -> 0.936, URDU 0.740 -> 0.750) and segments whose label
 * changes inside fall from 13 % to 3 % (BAVED). docs/results.md describes the rule.
 */

/** Silence up to this long between speech steps does not end a segment (pauses between words). */
export const SEGMENT_GAP_MS = 512;

export class SegmentMean {
  private readonly sum: Float64Array;
  private count = 0;
  private lastSpeechEndMs = Number.NEGATIVE_INFINITY;

  constructor(classes: number, private readonly gapMs = SEGMENT_GAP_MS) {
    this.sum = new Float64Array(classes);
  }

  /** Adds a speech step [startMs, endMs) and returns the mean since its segment began. */
  add(p: ArrayLike<number>, startMs: number, endMs: number): Float64Array {
    if (startMs - this.lastSpeechEndMs > this.gapMs) this.end();
    for (let j = 0; j < this.sum.length; j++) this.sum[j]! += p[j]!;
    this.count++;
    this.lastSpeechEndMs = endMs;
    return this.sum.map((v) => v / this.count);
  }

  /** A step without speech (not silence) ends the segment. */
  end(): void {
    this.sum.fill(0);
    this.count = 0;
  }
}
