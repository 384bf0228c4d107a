/**
 * The speaker map of a live stream: each window's embedding joins the closest known speaker or
 * starts the next one as soon as the encoder returns it (clustering.ts OnlineSpeakers; a stream told
 * a small num_speakers re-clusters its recent windows instead, recluster.ts; one told none re-clusters
 * them freely once it has enough, free-recluster.ts), and the steps it
 * decides are emitted at once. A step is decided when the last window that can cover it
 * (the one starting at or before it) is known, so it waits at most one window (W - 1 steps) and its
 * speaker never changes afterwards. Steps no window covers take the latest window's vector, or
 * zeros (speaker_1 at confidence 0) before the first one.
 *
 * Provisional answers (streams asking for them, docs/streaming.md): a step also gets the vector of
 * the latest embedded window that ends at or before it plus L steps (the manifest's
 * provisional_lookahead_steps; L = 0: "who spoke last", at once), so it waits for L steps of audio
 * and the windows ending by then, not for every window covering it; the final, the mean of every
 * window covering the step, follows as above (before the first embedded window: zeros, speaker_1 at
 * confidence 0). The ids are the same assigner's, so a provisional id is one the finals use.
 *
 * Sparse windows (speakers 1.9.0: fewer voiced steps than the schedule embeds, at least the
 * manifest's sparse_min_voiced_steps; mostly a turn's first and last windows) are scored against
 * the speakers as they stand, join or open none, and count in the steps they cover like the others:
 * without them a turn's first steps waited for a window mostly of the turn before, and a step's
 * provisional answer (taken from the latest window) named the previous speaker for the first ~0.5 s
 * of a turn after a pause.
 *
 * The assigner compares whitened embeddings where the model whitens (whitening.ts);
 * each speaker's gender reads the plain ones, as a file's does.
 */
import type { WindowOutcome } from '../inference/encoder-stage';
import { normalise, OnlineSpeakers, type Decision } from './clustering';
import type { SpeakerMapInfo } from './manifest';
import type { ClusteringThread } from './clustering-thread';
import { FreeReclusteringSpeakers } from './free-recluster';
import { ReclusteringSpeakers } from './recluster';
import { SpeakerEmbeddingSums } from './speaker-gender';
import { whiten } from './whitening';

/** How a stream gives each embedded window a speaker. */
export interface Assigner {
  readonly count: number;
  /**
   * `compared`: the unit embedding as compared (whitened where the model whitens); `plain`: as the
   * encoder gave it, unit. A promise where a clustering on another thread decides the window: the
   * next window is added only once it resolves.
   */
  add(compared: Float64Array, window: number, plain: Float64Array): Decision | Promise<Decision>;
  /**
   * A window's probabilities over the ids from the speakers as they stand, joining or opening none
   * (a sparse window); undefined while there is no speaker. Called only once every add() has settled.
   */
  score(compared: Float64Array, plain: Float64Array): number[] | undefined;
}

/**
 * A stream's assigner: told two speakers (a call's parties), Reclustering (recluster.ts); told
 * none, free re-clustering once the manifest says so (free-recluster.ts); else one window at a
 * time. The re-clusterings run on `clustering`'s thread when given, else here.
 */
export function streamAssigner(map: SpeakerMapInfo, cap: number, numSpeakers?: number, clustering?: ClusteringThread): Assigner {
  if (numSpeakers !== undefined && numSpeakers >= 2 && numSpeakers <= map.recluster.maxSpeakers && numSpeakers <= cap) {
    return new ReclusteringSpeakers(map.params, map.recluster, numSpeakers, clustering && ((windows) => clustering.counted(map, numSpeakers, windows)));
  }
  if (numSpeakers === undefined && map.recluster.freeMinWindows > 0) {
    return new FreeReclusteringSpeakers(map, cap, clustering && ((windows, whitened) => clustering.free(map, cap, windows, whitened)));
  }
  return new OnlineSpeakers(map.params, cap);
}

export class LiveSpeakerMap {
  private readonly assigner: Assigner;
  /** Embedded windows that may still cover an undecided step, with their vectors ([width]). */
  private recent: { window: number; probs: Float32Array }[] = [];
  private latest: Float32Array | undefined;
  private emitted = 0;
  /** Windows whose outcome is known (0 .. outcomes - 1). */
  private outcomes = 0;
  /** The latest embedded window's vector (provisional answers). */
  private newest: Float32Array | undefined;
  /** Steps given a provisional vector so far. */
  private provisionalTo = 0;
  private closed = false;
  /** Receives the provisional vectors of steps [startStep, startStep + steps), when set (ProvisionalResults). */
  onProvisional: ((startStep: number, probs: Float32Array, steps: number) => void) | undefined;
  /** Each speaker's windows (unit embeddings), for its gender in the summary (speaker-gender.ts). */
  readonly embeddings = new SpeakerEmbeddingSums();

  /**
   * @param width    floats per emitted step (the model's raw keys: MAX_SPEAKERS)
   * @param maxSpeakers the most speakers this stream is split into
   * @param onOutput the probabilities of steps [startStep, startStep + steps), [steps][width]
   * @param stepsReceived steps of audio received so far (the last windows reach past the end)
   * @param numSpeakers the request's num_speakers, if given
   * @param clustering where its re-clusterings run (default: here, on the calling thread)
   */
  constructor(
    private readonly map: SpeakerMapInfo,
    private readonly width: number,
    maxSpeakers: number,
    private readonly onOutput: (startStep: number, probs: Float32Array, steps: number) => void,
    private readonly stepsReceived: () => number,
    numSpeakers?: number,
    clustering?: ClusteringThread,
  ) {
    this.assigner = streamAssigner(map, Math.min(maxSpeakers, width), numSpeakers, clustering);
  }

  /** The stream ended early: a clustering still in flight emits nothing when it returns. */
  close(): void {
    this.closed = true;
  }

  /** Speakers found so far. */
  get count(): number {
    return this.assigner.count;
  }

  /**
   * The next window's outcome (in window order). A promise while a clustering on another thread
   * decides it: the next outcome waits for it (the encoder stage chains them).
   */
  pushWindow(o: WindowOutcome): void | Promise<void> {
    this.provisionalBefore(o.window); // their windows are the ones before this one
    if (o.kind === 'sparse') return this.emitWindow(o.window, this.scored(o.embeddings[0]));
    if (o.kind !== 'embedded') return this.emitWindow(o.window);
    const embedding = normalise(o.embeddings[0]!);
    const decision = this.assigner.add(this.compared(embedding), o.window, embedding);
    const take = (d: Decision): void => {
      this.embeddings.add(d.speaker, embedding);
      this.emitWindow(o.window, d.probs);
    };
    if (!(decision instanceof Promise)) return take(decision);
    return decision.then((d) => {
      if (!this.closed) take(d);
    });
  }

  /** The unit embedding as the assigner compares it (whitened where the model whitens). */
  private compared(plain: Float64Array): Float64Array {
    return this.map.whitening ? whiten(this.map.whitening, plain) : plain;
  }

  /** A sparse window's vector: scored against the speakers as they stand (none before the first speaker). */
  private scored(embedding: Float32Array | undefined): number[] | undefined {
    if (!embedding) return undefined;
    const plain = normalise(embedding);
    return this.assigner.score(this.compared(plain), plain);
  }

  /** Window `window`'s outcome is known (`probs`: its vector, when embedded and decided or scored): the steps it decides are emitted. */
  private emitWindow(window: number, probs?: readonly number[]): void {
    const { hopSteps: H, windowSteps: W } = this.map.params;
    if (probs) {
      const v = new Float32Array(this.width);
      v.set(probs);
      this.recent.push({ window, probs: v });
      this.newest = v;
    }
    this.outcomes = window + 1;
    this.provisionalReady();
    const end = Math.min((window + 1) * H, this.stepsReceived());
    if (end <= this.emitted) return;
    const from = this.emitted;
    const out = new Float32Array((end - from) * this.width);
    for (let s = from; s < end; s++) {
      while (this.recent.length > 0 && this.recent[0]!.window * H + W <= s) this.latest = this.recent.shift()!.probs;
      const row = out.subarray((s - from) * this.width, (s - from + 1) * this.width);
      let covering = 0;
      for (const w of this.recent) {
        if (w.window * H > s) break;
        for (let k = 0; k < this.width; k++) row[k]! += w.probs[k]!;
        covering++;
      }
      if (covering > 0) for (let k = 0; k < this.width; k++) row[k]! /= covering;
      else if (this.latest) row.set(this.latest);
    }
    this.emitted = end;
    this.onOutput(from, out, end - from);
  }

  /**
   * New steps arrived or a window's outcome: gives the provisional vector to every received step s
   * whose windows ending at or before s + L are all known (window j's last step is jH + W - 1), so
   * a step waits for the encoder only where a window ends at s + L.
   */
  provisionalReady(): void {
    this.provisionalBefore(this.outcomes);
  }

  /** Provisional vectors for the steps s whose s + L comes before window `window`'s last step. */
  private provisionalBefore(window: number): void {
    const { hopSteps: H, windowSteps: W } = this.map.params;
    this.provisionalUpTo(window * H + W - 1 - this.map.provisionalLookaheadSteps);
  }

  /**
   * Steps before `to` (and received) take the latest embedded window's vector; before the first one, zeros:
   * speaker_1 at confidence 0 (the first voice is always speaker_1; its final has the windows' confidence).
   */
  private provisionalUpTo(to: number): void {
    if (!this.onProvisional) return;
    const end = Math.min(this.stepsReceived(), to);
    if (end <= this.provisionalTo) return;
    const from = this.provisionalTo;
    this.provisionalTo = end;
    const out = new Float32Array((end - from) * this.width);
    if (this.newest) for (let s = 0; s < end - from; s++) out.set(this.newest, s * this.width);
    this.onProvisional(from, out, end - from);
  }
}
