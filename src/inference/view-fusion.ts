/**
 * Fuses a model's per-step network output with its encoder views (views.ts): for step s in
 * window k, the views' logits are those of the run's latest embedded window up to k (each head
 * applied to its encoder's embedding); fused probabilities =
 * softmax_c(net * log p_net,c + sum_i views[i] * z_i,c + bias_c) (two classes: the same rule in log-odds).
 * Steps with no embedded window in their run keep the network's own output unchanged.
 *
 * Window k ends at most W - 1 steps after any of its steps, within the models' lookahead, so
 * a live stream emits a fused step no later than the network alone would (docs/features.md).
 */
import type { WindowOutcome } from './encoder-stage';
import type { ModelViews } from './views';
import { StepBuffer } from './step-buffer';

/** Probabilities are clamped to at least EPS before taking logs. */
const EPS = 1e-6;

export class ViewFusion {
  private readonly C: number;
  private readonly net: StepBuffer;
  /** Weighted view logits [C] in force for each window reported and not yet passed (undefined: none). */
  private readonly windowLogits: (Float32Array | undefined)[] = [];
  private firstWindow = 0;
  private current: Float32Array | undefined;
  private emitted = 0;

  /**
   * @param embeddingIndex where each view's embedding is in a window outcome's `embeddings`
   *   (default: in the views' order; a stage shared by several models embeds the union of their encoders)
   */
  constructor(
    private readonly views: ModelViews,
    private readonly onOutput: (startStep: number, probs: Float32Array, steps: number) => void,
    private readonly embeddingIndex: readonly number[] = views.views.map((_, i) => i),
  ) {
    this.C = views.classes;
    this.net = new StepBuffer(this.C);
  }

  /** Steps emitted so far. */
  get steps(): number {
    return this.emitted;
  }

  /** The weighted sum of the heads' logits [C] for one window's embeddings. */
  viewLogits(embeddings: Float32Array[]): Float32Array {
    const C = this.C;
    const sum = new Float32Array(C);
    this.views.views.forEach(({ head, encoder }, v) => {
      const e = embeddings[this.embeddingIndex[v]!]!;
      const dim = encoder.dim;
      const w = this.views.fusion.views[v]!;
      for (let c = 0; c < C; c++) {
        let z = head.bias[c]!;
        const row = c * dim;
        for (let i = 0; i < dim; i++) z += head.weights[row + i]! * e[i]!;
        sum[c]! += w * z;
      }
    });
    return sum;
  }

  /** The network's output for the next `steps` steps, [steps][C]. */
  pushNet(probs: Float32Array, steps: number): void {
    this.net.append(probs.subarray(0, steps * this.C));
    this.flush();
  }

  /**
   * The next window's outcome (in window order). A stage shared with other schedules may embed
   * more windows than this model's schedule: only those at its own run positions (run % every = 0)
   * are read, so a model's results do not depend on which other models run beside it.
   */
  pushWindow(o: WindowOutcome): void {
    if (o.kind === 'embedded' && o.run % this.views.schedule.every === 0) this.current = this.viewLogits(o.embeddings as Float32Array[]);
    else if (o.kind === 'none' || o.kind === 'sparse') this.current = undefined;
    this.windowLogits.push(this.current);
    this.flush();
  }

  private flush(): void {
    const W = this.views.schedule.windowSteps;
    const C = this.C;
    const known = (this.firstWindow + this.windowLogits.length) * W;
    const end = Math.min(this.net.end, known);
    if (end <= this.emitted) return;
    const from = this.emitted;
    const src = this.net.view(from, end);
    const out = Float32Array.from(src.subarray(0, (end - from) * C));
    const { net, bias } = this.views.fusion;
    const z = new Float64Array(C);
    for (let s = from; s < end; s++) {
      const vl = this.windowLogits[Math.floor(s / W) - this.firstWindow];
      if (!vl) continue; // no view: the network's own output
      const o = (s - from) * C;
      let max = -Infinity;
      for (let c = 0; c < C; c++) {
        z[c] = net * Math.log(Math.max(EPS, src[o + c]!)) + vl[c]! + bias[c]!;
        if (z[c]! > max) max = z[c]!;
      }
      let total = 0;
      for (let c = 0; c < C; c++) total += z[c] = Math.exp(z[c]! - max);
      for (let c = 0; c < C; c++) out[o + c] = z[c]! / total;
    }
    this.emitted = end;
    this.net.dropBefore(end);
    const passed = Math.floor(end / W) - this.firstWindow;
    if (passed > 0) {
      this.windowLogits.splice(0, passed);
      this.firstWindow += passed;
    }
    this.onOutput(from, out, end - from);
  }
}
