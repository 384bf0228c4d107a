/**
 * Fuses a two-class model's per-step network output with its encoder views (views.ts): for
 * step s in window k, the views' log-odds are those of the run's latest embedded window up to
 * k (each head applied to its encoder's embedding); fused log-odds = net * L_net +
 * sum_i views[i] * L_i + bias.
 * Steps with no embedded window in their run keep the network's own output unchanged.
 *
 * Window k ends at most W - 1 steps after any of its steps, within the models' lookahead, so
 * a live stream emits a fused step no later than the network alone would (docs/features.md).
 */
import type { WindowOutcome } from './encoder-stage';
import type { ModelViews } from './views';
import { StepBuffer } from './step-buffer';

/** Probabilities are clamped to [EPS, 1 - EPS] before taking log-odds. */
const EPS = 1e-6;

export class ViewFusion {
  private readonly net = new StepBuffer(2);
  /** Weighted view log-odds in force for each window reported and not yet passed (NaN: none). */
  private readonly windowLogit: number[] = [];
  private firstWindow = 0;
  private current = NaN;
  private emitted = 0;

  constructor(
    private readonly views: ModelViews,
    private readonly onOutput: (startStep: number, probs: Float32Array, steps: number) => void,
  ) {}

  /** Steps emitted so far. */
  get steps(): number {
    return this.emitted;
  }

  /** The weighted sum of the heads' log-odds for one window's embeddings (raw_keys[1] against raw_keys[0]). */
  viewLogit(embeddings: Float32Array[]): number {
    let sum = 0;
    this.views.views.forEach(({ head }, v) => {
      const e = embeddings[v]!;
      let z = head.bias;
      for (let i = 0; i < head.weights.length; i++) z += head.weights[i]! * e[i]!;
      sum += this.views.fusion.views[v]! * z;
    });
    return sum;
  }

  /** The network's output for the next `steps` steps, [steps][2]. */
  pushNet(probs: Float32Array, steps: number): void {
    this.net.append(probs.subarray(0, steps * 2));
    this.flush();
  }

  /** The next window's outcome (in window order). */
  pushWindow(o: WindowOutcome): void {
    if (o.kind === 'embedded') this.current = this.viewLogit(o.embeddings);
    else if (o.kind === 'none') this.current = NaN;
    this.windowLogit.push(this.current);
    this.flush();
  }

  private flush(): void {
    const W = this.views.schedule.windowSteps;
    const known = (this.firstWindow + this.windowLogit.length) * W;
    const end = Math.min(this.net.end, known);
    if (end <= this.emitted) return;
    const from = this.emitted;
    const out = new Float32Array((end - from) * 2);
    const src = this.net.view(from, end);
    const { net, bias } = this.views.fusion;
    for (let s = from; s < end; s++) {
      const i = s - from;
      const vl = this.windowLogit[Math.floor(s / W) - this.firstWindow]!;
      if (Number.isNaN(vl)) {
        out[2 * i] = src[2 * i]!;
        out[2 * i + 1] = src[2 * i + 1]!;
        continue;
      }
      const p = Math.min(1 - EPS, Math.max(EPS, src[2 * i + 1]!));
      const z = net * Math.log(p / (1 - p)) + vl + bias;
      const p1 = 1 / (1 + Math.exp(-z));
      out[2 * i] = 1 - p1;
      out[2 * i + 1] = p1;
    }
    this.emitted = end;
    this.net.dropBefore(end);
    const passed = Math.floor(end / W) - this.firstWindow;
    if (passed > 0) {
      this.windowLogit.splice(0, passed);
      this.firstWindow += passed;
    }
    this.onOutput(from, out, end - from);
  }
}
