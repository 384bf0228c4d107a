/**
 * The speaker map's clusterings on a thread of their own. Clustering is plain arithmetic on the
 * main thread's data, but not small: an hour of a file's windows takes seconds, and a live stream
 * re-clusters its last 256 windows every ~1.5 s of voice without a count, every ~3 s with one
 * (tens of ms each). On
 * the main thread every other job and stream waited meanwhile (a live label held up for seconds
 * while a file job finished). Here the main thread only packs the windows, posts them and goes on;
 * the answer is a promise. The arithmetic is the same functions the tests and tools call in place
 * (file-map.ts speakersOfFile, free-recluster.ts freeClusters, recluster.ts countedClusters), so
 * the results are identical.
 *
 * One thread per lane (the engine keeps one for files, one for streams, so a stream's short
 * clustering never queues behind a file's long one); started on first use, it keeps the process
 * alive only while it has work. Calls wait on this side and the thread runs one at a time. A crashed
 * thread fails the call it was running (INFERENCE_FAILED) and the next call starts a new one; so does
 * a cancelled file job's running call (the thread is ended rather than left to finish work no one
 * wants); a cancelled call still waiting just leaves the queue.
 */
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { AurisError } from '../errors';
import type { ChannelSpeakers, FileCounts } from './file-map';
import type { FreeClusters } from './free-recluster';
import type { CountedClusters } from './recluster';
import type { SpeakerMapInfo } from './manifest';
import type { EmbeddedWindow } from './clustering';
import { SpeakerEmbeddingSums } from './speaker-gender';
import { packRows, packWindows, type ClusteringReply, type ClusteringRequest, type PackedWindows } from './clustering-protocol';

/** The clustering thread's young generation (V8 resourceLimits.maxYoungGenerationSizeMb). */
const YOUNG_GENERATION_MB = 2;

type Task =
  | { type: 'file'; steps: number; speech: Uint8Array; counts: FileCounts }
  | { type: 'free'; cap: number; whitened?: Float64Array }
  | { type: 'counted'; speakers: number };

/** A call: its message (the map is added when posted, if the thread lacks it), the buffers it hands over, its promise's ends. */
interface Call {
  map: SpeakerMapInfo;
  msg: ClusteringRequest;
  transfer: ArrayBuffer[];
  resolve: (reply: ClusteringReply) => void;
  reject: (e: Error) => void;
}

export class ClusteringThread {
  private worker: Worker | undefined;
  private nextId = 1;
  /**
   * Calls wait here and the thread gets one at a time (it would run them one at a time anyway): a cancelled call
   * that is running can then be stopped by ending the thread, and the calls behind it go to a new one, their
   * windows still here (posted, they would have been handed over to the ended thread).
   */
  private readonly queue: Call[] = [];
  /** The call the thread is running (posted, not answered). */
  private inFlight: Call | undefined;
  /** Models' speaker maps get an id each; the current thread has been sent those in `sent`. */
  private readonly mapIds = new Map<SpeakerMapInfo, number>();
  private sent = new Set<number>();
  private closed = false;
  /** The exit of the last thread ended for idleness or cancellation. */
  private exiting: Promise<unknown> = Promise.resolve();

  /**
   * @param lane what the thread clusters, for its name in errors and the debugger ('files', 'streams')
   * @param endWhenIdle end the thread as soon as it has no work (the next call starts another): a file
   *   job's clustering comes once per channel and its heap (tens of MB after an hour) would otherwise stay
   *   while the job builds its result; a stream's come every second or two, so that lane keeps its thread
   */
  constructor(
    private readonly lane: string,
    private readonly endWhenIdle = false,
  ) {}

  /**
   * speakersOfFile on this thread (`windows` travel: their buffers are no longer usable here). `signal`: the job's;
   * when it fires the call fails (ABORTED) and, if the thread is running it, the thread ends at once instead of
   * finishing an hour's clustering for no one (the calls behind it go to a new thread).
   */
  async file(map: SpeakerMapInfo, windows: PackedWindows, steps: number, speech: Uint8Array, counts: FileCounts = {}, signal?: AbortSignal): Promise<ChannelSpeakers> {
    const reply = await this.call(map, windows, { type: 'file', steps, speech: speech.slice(), counts }, signal);
    return { keys: reply.keys, probs: reply.probs, embeddings: SpeakerEmbeddingSums.fromData(reply.embeddings) };
  }

  /** freeClusters on this thread (`whitened`: the same windows as compared, where the model whitens). */
  async free(map: SpeakerMapInfo, cap: number, windows: readonly EmbeddedWindow[], whitened?: readonly Float64Array[]): Promise<FreeClusters> {
    const task: Task = { type: 'free', cap };
    if (whitened) task.whitened = packRows(whitened).packed;
    return (await this.call(map, packWindows(windows), task)).clusters;
  }

  /** countedClusters on this thread (a stream told its count). */
  async counted(map: SpeakerMapInfo, speakers: number, windows: readonly EmbeddedWindow[]): Promise<CountedClusters> {
    return (await this.call(map, packWindows(windows), { type: 'counted', speakers })).clusters;
  }

  /** Ends the thread; calls in flight fail (CLOSED). */
  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.worker = undefined;
    const calls = [...(this.inFlight ? [this.inFlight] : []), ...this.queue];
    this.queue.length = 0;
    this.inFlight = undefined;
    for (const c of calls) c.reject(new AurisError('CLOSED', `speaker clustering (${this.lane}) shut down`));
    if (w) await w.terminate();
  }

  /** The task's answer (a reply of its type; an error reply or a reply of another type fails the call). */
  private async call<T extends Task>(map: SpeakerMapInfo, packed: PackedWindows, task: T, signal?: AbortSignal): Promise<Extract<ClusteringReply, { type: T['type'] }>> {
    const reply = await this.post(map, packed, task, signal);
    if (reply.type !== task.type) throw new AurisError('INFERENCE_FAILED', `speaker clustering (${this.lane}): unexpected reply ${reply.type}`);
    return reply as Extract<ClusteringReply, { type: T['type'] }>;
  }

  /** A thread is running (it ends when closed, crashed, cancelled or, for a lane that ends when idle, idle). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  private post(map: SpeakerMapInfo, packed: PackedWindows, task: Task, signal?: AbortSignal): Promise<ClusteringReply> {
    if (this.closed) return Promise.reject(new AurisError('CLOSED', `speaker clustering (${this.lane}) is shut down`));
    if (signal?.aborted) return Promise.reject(this.cancelled());
    let mapId = this.mapIds.get(map);
    if (mapId === undefined) this.mapIds.set(map, (mapId = this.mapIds.size + 1));
    const id = this.nextId++;
    const msg: ClusteringRequest = { id, mapId, windows: packed, ...task };
    const transfer: ArrayBuffer[] = [packed.index.buffer as ArrayBuffer, ...packed.chunks.map((c) => c.buffer as ArrayBuffer)];
    if (task.type === 'free' && task.whitened) transfer.push(task.whitened.buffer as ArrayBuffer);
    if (task.type === 'file') transfer.push(task.speech.buffer as ArrayBuffer);
    return new Promise<ClusteringReply>((resolve, reject) => {
      const onAbort = (): void => this.cancel(call);
      signal?.addEventListener('abort', onAbort, { once: true });
      const settled = (): void => signal?.removeEventListener('abort', onAbort);
      const call: Call = { map, msg, transfer, resolve: (r) => (settled(), resolve(r)), reject: (e) => (settled(), reject(e)) };
      this.queue.push(call);
      this.postNext();
    });
  }

  /** Posts the next waiting call when the thread runs none (starting a thread if there is none). */
  private postNext(): void {
    if (this.inFlight !== undefined) return;
    const call = this.queue.shift();
    if (!call) return;
    const worker = this.thread();
    const { msg } = call;
    // a model's map (its whitening matrix is 0.5 MB) crosses once per thread
    if (!this.sent.has(msg.mapId)) {
      msg.map = call.map;
      this.sent.add(msg.mapId);
    }
    this.inFlight = call;
    worker.ref();
    worker.postMessage(msg, call.transfer);
  }

  /**
   * `call` is not wanted any more (if not answered yet): it fails. Still waiting, it leaves the queue; running, its
   * thread is ended (an hour's clustering is not finished for no one) and the calls behind it go to a new thread.
   */
  private cancel(call: Call): void {
    if (call === this.inFlight) {
      this.inFlight = undefined;
      if (this.worker) this.end(this.worker);
      this.postNext();
    } else {
      const waiting = this.queue.indexOf(call);
      if (waiting < 0) return; // answered or failed already
      this.queue.splice(waiting, 1);
    }
    call.reject(this.cancelled());
  }

  private cancelled(): AurisError {
    return new AurisError('ABORTED', `speaker clustering (${this.lane}) cancelled`);
  }

  /** Ends an idle thread (its heap goes back to the system); the next call starts a new one. */
  private end(worker: Worker): void {
    if (this.forget(worker)) this.exiting = worker.terminate().catch(() => undefined);
  }

  /** Resolves once the last thread this lane ended (idle or cancelled) has exited, its heap unmapped. */
  async exited(): Promise<void> {
    await this.exiting;
  }

  /** No longer this lane's thread (false: it was not); the next call starts another and sends it the maps again. */
  private forget(worker: Worker): boolean {
    if (this.worker !== worker) return false;
    this.worker = undefined;
    this.sent = new Set();
    return true;
  }

  /** The running thread, started if there is none. */
  private thread(): Worker {
    if (this.worker) return this.worker;
    // a small young generation: with V8's default the thread's short-lived arrays held ~35 MB more at the peak of an
    // hour's clustering (a 1-hour file's job then passed its 300 MB), for no gain in time (docs/benchmarks.md)
    const resourceLimits = { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB };
    const worker = new Worker(path.join(__dirname, 'clustering-worker.js'), { name: `auris speaker clustering (${this.lane})`, resourceLimits });
    worker.unref();
    worker.on('message', (reply: ClusteringReply) => {
      const call = this.inFlight;
      if (this.worker !== worker || reply.id !== call?.msg.id) return; // an ended thread's, or a cancelled call's
      this.inFlight = undefined;
      if (this.queue.length > 0) this.postNext();
      else {
        worker.unref();
        if (this.endWhenIdle) this.end(worker);
      }
      if (reply.type === 'error') call.reject(new AurisError('INFERENCE_FAILED', `speaker clustering (${this.lane}) failed: ${reply.message}`));
      else call.resolve(reply);
    });
    // the running call fails; the calls behind it go to a new thread (one bad call does not fail the others)
    const die = (why: string): void => {
      if (!this.forget(worker)) return;
      const call = this.inFlight;
      this.inFlight = undefined;
      call?.reject(new AurisError('INFERENCE_FAILED', `speaker clustering thread (${this.lane}) ${why}`));
      this.postNext();
    };
    worker.on('error', (e) => die(`crashed: ${e.message}`));
    worker.on('exit', (code) => die(`exited (code ${code})`));
    this.worker = worker;
    return worker;
  }
}
