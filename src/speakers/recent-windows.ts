/**
 * A re-clustering stream's memory (recluster.ts, free-recluster.ts): its last `history` embedded
 * windows, each as the encoder gave it and as compared (whitened where the model whitens), and the
 * id each was given; the newest window has no id while it is being decided. Bounded, so a stream of
 * any length costs the same.
 */
import type { EmbeddedWindow } from './clustering';

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

  /** The newest window's id. */
  decided(id: number): void {
    this.ids.push(id);
    this.usedCount = Math.max(this.usedCount, id + 1);
  }
}
