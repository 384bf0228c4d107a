/**
 * Growable float32 storage for a run of consecutive 64 ms steps [start, end), `width` floats
 * per step: features (256 per step), per-step model outputs (one per class) or levels (1).
 * Appends at the end, forgets from the front; what the windowed and streaming runners, the
 * file pipeline and the stream session all keep.
 */
export class StepBuffer {
  /** Empty until the first append: a stream that never sends audio costs no storage. */
  private data = new Float32Array(0);
  private readonly initialFloats: number;
  /** First step held. */
  start = 0;
  /** Steps held. */
  length = 0;

  constructor(
    readonly width: number,
    capacitySteps = 64,
  ) {
    this.initialFloats = Math.max(16, capacitySteps) * width;
  }

  /** One past the last step held. */
  get end(): number {
    return this.start + this.length;
  }

  /** Appends whole steps (values.length a multiple of width). */
  append(values: Float32Array): void {
    const used = this.length * this.width;
    const need = used + values.length;
    if (need > this.data.length) {
      const grown = new Float32Array(Math.max(need, this.data.length * 2, this.initialFloats));
      grown.set(this.data.subarray(0, used));
      this.data = grown;
    }
    this.data.set(values, used);
    this.length += values.length / this.width;
  }

  /** The values of steps [from, to) (a view: valid until the next append or dropBefore). */
  view(from = this.start, to = this.end): Float32Array {
    return this.data.subarray((from - this.start) * this.width, (to - this.start) * this.width);
  }

  /** A copy of the values of steps [from, to) (owns its buffer: transferable to a worker). */
  copy(from: number, to: number): Float32Array {
    return this.data.slice((from - this.start) * this.width, (to - this.start) * this.width);
  }

  /** Forgets the steps before `step`. */
  dropBefore(step: number): void {
    const n = Math.min(step, this.end) - this.start;
    if (n <= 0) return;
    this.data.copyWithin(0, n * this.width, this.length * this.width);
    this.length -= n;
    this.start += n;
  }

  /** Forgets everything and frees the storage (later steps are not kept). */
  clear(): void {
    this.start = this.end;
    this.length = 0;
    this.data = new Float32Array(0);
  }
}
