/**
 * The speaker map against its Python reference (training/diarization/cluster.py): every case of
 * test/fixtures/speakers_golden.json (slices of simulated conversations with real speaker-encoder
 * embeddings; `python -m training diarization golden`) must come out step for step as the reference
 * says, for files (FileSpeakerMap.finish: speech gating, centring, clusterWindows, speakers that win
 * no speech step dropped) and for streams (OnlineSpeakers + stepProbabilities; and LiveSpeakerMap's
 * provisional answers, fed step by step as a live stream is). Any change to the
 * clustering's rules, ties or parameters' meaning shows here; then change cluster.py the same way and
 * regenerate the fixture.
 */
import { strict as assert } from 'node:assert';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { normalise, stepProbabilities, type SpeakerMapParams } from '../../src/speakers/clustering';
import { FileSpeakerMap, type ChannelSpeakers } from '../../src/speakers/file-map';
import { ClusteringThread } from '../../src/speakers/clustering-thread';
import { LiveSpeakerMap, streamAssigner } from '../../src/speakers/live-map';
import { parseAlikeMerge, type SpeakerMapInfo } from '../../src/speakers/manifest';
import type { ReclusterParams } from '../../src/speakers/recluster';
import { loadWhitening, whiten, type Whitening } from '../../src/speakers/whitening';
import type { EncoderInfo } from '../../src/inference/views';
import type { WindowOutcome } from '../../src/inference/encoder-stage';

const GOLDEN = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'speakers_golden.json');
const SPEAKERS_DIR = path.resolve(__dirname, '..', '..', '..', 'models', 'speakers');
const WINDOW_STEPS = 25;

interface Case {
  note: string;
  params: {
    hop_steps: number;
    gate_db: number;
    min_voiced_steps: number;
    segment_threshold: number;
    merge_threshold: number;
    refine_iterations: number;
    min_speaker_s: number;
    min_speaker_share: number;
    temperature: number;
    online_threshold: number;
    online_threshold_step?: number;
    provisional_lookahead_steps?: number;
    max_speakers: number;
    center: boolean;
    recluster_max_speakers: number;
    recluster_min_windows: number;
    recluster_every: number;
    recluster_history: number;
    /** streams without a count re-cluster freely from this many windows (speakers 1.8.0); absent or 0: never */
    free_recluster_min_windows?: number;
    /** ... every this many windows (speakers 1.8.1); absent or 0: recluster_every */
    free_recluster_every?: number;
    /** models/speakers/<this> whitens each embedding: streams compare (1.4.0), files merge alike speakers (1.5.0); absent or "": none */
    whitening?: string;
    /** files without a count: the rule that merges speakers found into one voice (speakers 1.6.0); absent or null: no merge */
    alike_merge?: Record<string, number> | null;
    /** files score windows against the speakers' whitened centroids (speakers 1.7.0); absent: the clustered ones */
    whitened_scores?: boolean;
    /** streams embed windows with this many voiced steps or more (fewer than min_voiced_steps) to score only (speakers 1.9.0); absent or 0: none */
    sparse_min_voiced_steps?: number;
  };
  steps: number;
  num_speakers?: number;
  windows: number[];
  embedding_scale: number;
  embeddings: number[][];
  /** the stream's sparse windows and their embeddings (as `embeddings`), where it has any */
  sparse_windows?: number[];
  sparse_embeddings?: number[][];
  speech: string;
  stream_num_speakers?: number;
  expected: { file: { K: number; labels: number[] }; stream: { K: number; labels: number[]; provisional: number[] } };
}

const golden = JSON.parse(fs.readFileSync(GOLDEN, 'utf8')) as { cases: Case[]; whitening_sha256?: Record<string, string> };
const cases = golden.cases;

const whitenings = new Map<string, Whitening>();

/** The case's whitening, read (once per file) from the shipped file the fixture was made with. */
function whiteningOf(c: Case): Whitening | undefined {
  const name = c.params.whitening ?? '';
  if (name === '' || c.embeddings.length === 0) return undefined; // no window to whiten
  if (!whitenings.has(name)) whitenings.set(name, loadWhitening(SPEAKERS_DIR, name, c.embeddings[0]!.length, GOLDEN));
  return whitenings.get(name);
}

function paramsOf(c: Case): SpeakerMapParams {
  const p = c.params;
  return {
    hopSteps: p.hop_steps,
    windowSteps: WINDOW_STEPS,
    segmentThreshold: p.segment_threshold,
    mergeThreshold: p.merge_threshold,
    refineIterations: p.refine_iterations,
    minSpeakerS: p.min_speaker_s,
    minSpeakerShare: p.min_speaker_share,
    temperature: p.temperature,
    onlineThreshold: p.online_threshold,
    onlineThresholdStep: p.online_threshold_step ?? 0,
  };
}

/** The embeddings as the encoder gives them (float32). */
function embeddingsOf(c: Case): Float32Array[] {
  return c.embeddings.map((e) => Float32Array.from(e, (x) => x / c.embedding_scale));
}

/** A stream's encoder-stage outcomes in window order, from 0 to the last window starting before the end: embedded, sparse or none. */
function outcomesOf(c: Case): WindowOutcome[] {
  const embedded = new Map(embeddingsOf(c).map((e, i) => [c.windows[i]!, e]));
  const sparse = new Map((c.sparse_embeddings ?? []).map((e, i) => [c.sparse_windows![i]!, Float32Array.from(e, (x) => x / c.embedding_scale)]));
  return Array.from({ length: Math.ceil(c.steps / c.params.hop_steps) }, (_, window): WindowOutcome => {
    const e = embedded.get(window);
    if (e) return { window, kind: 'embedded', embeddings: [e], run: 0 };
    const x = sparse.get(window);
    return x ? { window, kind: 'sparse', embeddings: [x] } : { window, kind: 'none' };
  });
}

/** Per step: the index of the largest probability (ties: the first). */
function labels(probs: Float32Array, steps: number): number[] {
  const width = probs.length / steps;
  return Array.from({ length: steps }, (_, s) => {
    let k = 0;
    for (let j = 1; j < width; j++) if (probs[s * width + j]! > probs[s * width + k]!) k = j;
    return k;
  });
}

function infoOf(c: Case): SpeakerMapInfo {
  const params = paramsOf(c);
  const whitening = whiteningOf(c);
  const rule = c.params.alike_merge ? parseAlikeMerge(c.params.alike_merge, 'golden case') : undefined;
  return {
    encoder: { windowSteps: WINDOW_STEPS } as EncoderInfo,
    schedule: { windowSteps: WINDOW_STEPS, hopSteps: params.hopSteps, every: 1, minVoicedSteps: c.params.min_voiced_steps, gateDb: c.params.gate_db },
    params,
    defaultMaxSpeakers: c.params.max_speakers,
    centre: c.params.center,
    recluster: reclusterOf(c),
    provisionalLookaheadSteps: c.params.provisional_lookahead_steps ?? 0,
    ...(whitening ? { whitening } : {}),
    ...(whitening && rule ? { alikeMerge: rule } : {}),
    ...(whitening && c.params.whitened_scores ? { whitenedScores: true } : {}),
  };
}

/** A file's labels, clustered here or (given `thread`) on a clustering thread, as the service does. */
function fileLabels(c: Case): { K: number; labels: number[] };
function fileLabels(c: Case, thread: ClusteringThread): Promise<{ K: number; labels: number[] }>;
function fileLabels(c: Case, thread?: ClusteringThread): { K: number; labels: number[] } | Promise<{ K: number; labels: number[] }> {
  const info = infoOf(c);
  const map = new FileSpeakerMap(info);
  embeddingsOf(c).forEach((e, i) => map.pushWindow({ window: c.windows[i]!, kind: 'embedded', embeddings: [e], run: 0 }));
  const speech = Uint8Array.from(c.speech, (ch) => (ch === '1' ? 1 : 0));
  const counts = c.num_speakers === undefined ? {} : { numSpeakers: c.num_speakers };
  const result = (out: ChannelSpeakers): { K: number; labels: number[] } => ({ K: out.keys.length, labels: labels(out.probs, c.steps) });
  if (thread) return thread.file(info, map.take(), c.steps, speech, counts).then(result);
  return result(map.finish(c.steps, speech, counts));
}

function reclusterOf(c: Case): ReclusterParams {
  const p = c.params;
  return {
    maxSpeakers: p.recluster_max_speakers,
    minWindows: p.recluster_min_windows,
    every: p.recluster_every,
    history: p.recluster_history,
    freeMinWindows: p.free_recluster_min_windows ?? 0,
    freeEvery: p.free_recluster_every || p.recluster_every,
  };
}

/** A stream's final labels, its re-clusterings run here or (given `thread`) on a clustering thread. */
async function streamLabels(c: Case, thread?: ClusteringThread): Promise<{ K: number; labels: number[] }> {
  const params = paramsOf(c);
  const width = c.stream_num_speakers ?? c.params.max_speakers;
  const online = streamAssigner(infoOf(c), width, c.stream_num_speakers, thread);
  const w = whiteningOf(c);
  const vectors: { window: number; probs: number[] }[] = [];
  for (const o of outcomesOf(c)) {
    if (o.kind !== 'embedded' && o.kind !== 'sparse') continue;
    const plain = normalise(o.embeddings[0]!);
    const compared = w ? whiten(w, plain) : plain;
    if (o.kind === 'sparse') {
      const probs = online.score(compared, plain); // scored, not assigned
      if (probs) vectors.push({ window: o.window, probs });
      continue;
    }
    const decision = online.add(compared, o.window, plain);
    if (!thread) assert.ok(!(decision instanceof Promise), 'decided on the calling thread');
    vectors.push({ window: o.window, probs: (await decision).probs });
  }
  const probs = stepProbabilities(vectors, c.steps, width, params, false);
  return { K: Math.max(1, online.count), labels: labels(probs, c.steps) };
}

/**
 * A live stream's provisional labels (-1: a step never answered): steps arrive one at a time, each window's outcome
 * right after its last step (embedded or not), as the encoder stage reports them, and those reaching past the end at the end.
 */
function provisionalLabels(c: Case): number[] {
  const H = c.params.hop_steps;
  const width = c.stream_num_speakers ?? c.params.max_speakers;
  const got: number[] = new Array<number>(c.steps).fill(-1);
  let received = 0;
  const live = new LiveSpeakerMap(infoOf(c), width, width, () => undefined, () => received, c.stream_num_speakers);
  live.onProvisional = (start, probs, steps) => labels(probs, steps).forEach((l, i) => (got[start + i] = l));
  const outcomes = outcomesOf(c);
  let next = 0;
  const push = (): void => void live.pushWindow(outcomes[next++]!);
  for (let s = 0; s < c.steps; s++) {
    received = s + 1;
    live.provisionalReady();
    while (next * H + WINDOW_STEPS - 1 === s) push();
  }
  // the end of the stream: the windows reaching past it (EncoderStage.end)
  while (next * H < c.steps) push();
  return got;
}

describe('speaker map golden cases (training/diarization/cluster.py)', () => {
  it('has the cases the fixture promises', () => {
    assert.ok(cases.length >= 4);
    assert.ok(cases.some((c) => c.num_speakers !== undefined));
    assert.ok(cases.some((c) => c.windows.length === 0));
    assert.ok(cases.some((c) => c.params.hop_steps === 6) && cases.some((c) => c.params.hop_steps === 12), 'both hops the cache holds');
    assert.ok(cases.some((c) => c.stream_num_speakers !== undefined && c.windows.length > c.params.recluster_min_windows));
    const free = (c: Case): number => c.params.free_recluster_min_windows ?? 0;
    assert.ok(cases.some((c) => c.stream_num_speakers === undefined && free(c) > 0 && c.windows.length > free(c)), 'a stream re-clustering freely');
    assert.ok(cases.some((c) => c.params.whitening), 'whitened as the manifest says');
    assert.ok(cases.some((c) => c.params.alike_merge && c.num_speakers === undefined), "a file's alike speakers merged");
    for (const [name, sha] of Object.entries(golden.whitening_sha256 ?? {})) {
      const now = crypto.createHash('sha256').update(fs.readFileSync(path.join(SPEAKERS_DIR, name))).digest('hex');
      assert.equal(now, sha, `models/speakers/${name} changed since the fixture was made: python -m training diarization golden`);
    }
    for (const c of cases) {
      assert.equal(c.speech.length, c.steps);
      assert.equal(c.embeddings.length, c.windows.length);
    }
  });

  for (const c of cases) {
    it(`file: ${c.note}`, () => {
      assert.deepEqual(fileLabels(c), c.expected.file);
    });
    it(`stream: ${c.note}`, async () => {
      const { provisional, ...finals } = c.expected.stream;
      assert.deepEqual(await streamLabels(c), finals);
      assert.deepEqual(provisionalLabels(c), provisional, 'provisional labels');
    });
  }
});

describe('speaker map golden cases on the clustering threads (as the service runs them)', () => {
  const files = new ClusteringThread('files', true); // as the engine's: a new thread for each file
  const streams = new ClusteringThread('streams');
  after(() => Promise.all([files.close(), streams.close()]));

  for (const c of cases) {
    it(`file: ${c.note}`, async () => {
      assert.deepEqual(await fileLabels(c, files), c.expected.file);
    });
    it(`stream: ${c.note}`, async () => {
      const { provisional: _, ...finals } = c.expected.stream;
      assert.deepEqual(await streamLabels(c, streams), finals);
    });
  }
});
