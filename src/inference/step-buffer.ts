/**
 * Growable float32 storage for a run of consecutive 64 ms steps [start, end), `width` floats
 * per step: features (256 per step), per-step model outputs (one per class) or levels (1).
 * Appends at the end, forgets from the front; what the windowed and streaming runners, the
 * file pipeline and the stream session all keep.
 *
 * Forgetting only moves an offset; the live steps are moved to the front of the storage only
 * when an append reaches its end. A live stream's runner drops a step or two per model call
 * while it keeps its model's context (~50 steps) in storage sized for the context plus 16
 * steps: the context is now moved once per ~14 steps instead of at every call.
 */
export class StepBuffer {
  /** Empty until the first append: a stream that never sends audio costs no storage. */
  private data = new Float32Array(0);
  private readonly initialFloats: number;
  /** Offset in `data` of step `start`, floats. */
  private offset = 0;
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
    if (this.offset + used + values.length > this.data.length) this.makeRoom(used, values.length);
    this.data.set(values, this.offset + used);
    this.length += values.length / this.width;
  }

  /** The values of steps [from, to) (a view: valid until the next append or dropBefore). */
  view(from = this.start, to = this.end): Float32Array {
    return this.data.subarray(this.offset + (from - this.start) * this.width, this.offset + (to - this.start) * this.width);
  }

  /** A copy of the values of steps [from, to) (owns its buffer: transferable to a worker). */
  copy(from: number, to: number): Float32Array {
    return this.data.slice(this.offset + (from - this.start) * this.width, this.offset + (to - this.start) * this.width);
  }

  /** Forgets the steps before `step`. */
  dropBefore(step: number): void {
    const n = Math.min(step, this.end) - this.start;
    if (n <= 0) return;
    this.offset = this.length === n ? 0 : this.offset + n * this.width;
    this.length -= n;
    this.start += n;
  }

  /** Forgets everything and frees the storage (later steps are not kept). */
  clear(): void {
    this.start = this.end;
    this.length = 0;
    this.offset = 0;
    this.data = new Float32Array(0);
  }

  /** Room for `more` floats after the `used` live ones: moves them to the front when that is enough, else grows. */
  private makeRoom(used: number, more: number): void {
    const need = used + more;
    if (need <= this.data.length) {
      this.data.copyWithin(0, this.offset, this.offset + used);
    } else {
      const grown = new Float32Array(Math.max(need, this.data.length * 2, this.initialFloats));
      grown.set(this.data.subarray(this.offset, this.offset + used));
      this.data = grown;
    }
    this.offset = 0;
  }
}
