/**
 * A re-clustering stream's memory (recluster.ts, free-recluster.ts): its last `history` embedded
 * windows, each as the encoder gave it and as compared (whitened where the model whitens), and the
 * id each was given; the newest window has no id while it is being decided. Bounded, so a stream of
 * any length costs the same.
 */
import type { Decision, EmbeddedWindow } from './clustering';

export class RecentWindows {
  /** Unit embeddings as the encoder gave them, window order, the newest last. */
  readonly windows: EmbeddedWindow[] = [];
  /** The same windows as compared (the pair rule's view: not recomputed). */
  readonly compared: Float64Array[] = [];
  /** The id given to each of `windows` but the newest while it is being decided. */
  readonly ids: number[] = [];
  private seenCount = 0;
  private usedCount = 0;

  constructor(private readonly history: number) {}

  /** Windows seen, kept or not. */
  get seen(): number {
    return this.seenCount;
  }

  /** Speakers given an id so far. */
  get used(): number {
    return this.usedCount;
  }

  /** The next window, before its id is decided; the oldest is dropped past `history`. */
  push(window: number, embedding: Float64Array, compared: Float64Array = embedding): void {
    this.seenCount++;
    this.windows.push({ window, embedding });
    this.compared.push(compared);
    if (this.windows.length > this.history) {
      this.windows.shift();
      this.compared.shift();
      this.ids.shift();
    }
  }

  /** The newest window's decision: its id is kept; returns the decision. */
  decided(out: Decision): Decision {
    this.ids.push(out.speaker);
    this.usedCount = Math.max(this.usedCount, out.speaker + 1);
    return out;
  }

  /**
   * The newest window decided from a clustering once it is found (`decide` takes it and answers): at once
   * when it was found here, else when the promise of the clustering thread settles.
   */
  decideWith<C>(found: C | Promise<C>, decide: (clusters: C) => Decision): Decision | Promise<Decision> {
    if (found instanceof Promise) return found.then((c) => this.decided(decide(c)));
    return this.decided(decide(found));
  }
}
