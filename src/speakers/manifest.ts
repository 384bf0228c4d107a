/**
 * The `speakers` model's manifest (models/speakers/manifest.json, kind "speaker_map"): no network
 * of its own, a pretrained encoder (models/encoders/<name>/) on overlapping windows and the
 * clustering tunables of clustering.ts. The registry turns it into a ModelInfo like the others
 * (raw keys speaker_1..speaker_MAX_SPEAKERS) so every front door lists and validates it the same way.
 */
import path from 'node:path';
import { AurisError } from '../errors';
import { loadEncoder, parseSpeechGate, type EncoderInfo, type SpeechGate, type ViewSchedule } from '../inference/views';
import type { SpeakerMapParams } from './clustering';
import type { ReclusterParams } from './recluster';
import { loadWhitening, type Whitening } from './whitening';
import { PAIR_FEATURES, type AlikeMergeRule } from './alike-merge';

/** The most speakers a channel can be split into (and the bound of max_speakers / num_speakers). */
export const MAX_SPEAKERS = 20;
export const SPEAKER_MAP_KIND = 'speaker_map';

/** speaker_1 .. speaker_n. */
export function speakerKeys(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `speaker_${i + 1}`);
}

export interface SpeakerMapInfo {
  encoder: EncoderInfo;
  /** Which windows are embedded (every voiced one: `every` 1). */
  schedule: ViewSchedule & { hopSteps: number };
  /**
   * File jobs also leave out the windows whose first steps the speech model calls music or noise
   * (speakers 1.9.1; absent: none). Not live streams: there it cost 0.4-0.8 points of DER (MODEL_CARD).
   */
  fileSpeechGate?: SpeechGate;
  params: SpeakerMapParams;
  /** max_speakers when a request sets neither it nor num_speakers. */
  defaultMaxSpeakers: number;
  /** Files: take the recording's mean embedding away before clustering (file-map.ts). */
  centre: boolean;
  /** Streams told a small num_speakers re-cluster their recent windows (recluster.ts). */
  recluster: ReclusterParams;
  /**
   * Streams' provisional answers: step s takes the latest window ending at or before step s + this,
   * so it waits for this many steps of audio (live-map.ts; 0 = "who spoke last", at once).
   */
  provisionalLookaheadSteps: number;
  /**
   * The matrix unit embeddings are whitened by (whitening.ts): streams compare whitened windows,
   * files merge speakers a learnt rule calls one voice (alike-merge.ts).
   */
  whitening?: Whitening;
  /** Files without a caller's count: the rule that says two speakers found are one voice. */
  alikeMerge?: AlikeMergeRule;
  /**
   * Files score each window against the speakers' whitened centroids instead of the clustered ones
   * (speakers 1.7.0; needs `whitening`; file-map.ts).
   */
  whitenedScores?: boolean;
  /**
   * Live streams also embed the windows with at least this many voiced steps but fewer than the
   * schedule's ('sparse': mostly a turn's first and last windows); each is scored against the
   * speakers as they stand, joins or opens none, and counts in the steps it covers, provisional and
   * final (live-map.ts; speakers 1.9.0). Absent: streams embed the schedule's windows only.
   */
  sparseMinVoicedSteps?: number;
}

function fail(file: string, problem: string): AurisError {
  return new AurisError('MODEL_LOAD_FAILED', `${file}: ${problem}`, { file });
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Parses and checks the "speaker_map" block of a manifest of kind speaker_map. */
export function parseSpeakerMap(m: Record<string, unknown>, modelsDir: string, file: string): SpeakerMapInfo {
  const encoder = loadEncoder(modelsDir, String(m['encoder']), file);
  const b = m['speaker_map'];
  if (!isObj(b)) throw fail(file, '"speaker_map" must be an object');
  const W = encoder.windowSteps;
  /** An integer in min..max (a count may be 0, a size or period may not). */
  const int = (k: string, max: number, min = 1): number => {
    const v = b[k];
    if (!(typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max)) throw fail(file, `"speaker_map.${k}" must be an integer in ${min}..${max}`);
    return v;
  };
  const num = (k: string, lo: number, hi: number): number => {
    const v = b[k];
    if (!isNum(v) || v < lo || v > hi) throw fail(file, `"speaker_map.${k}" must be a number in [${lo}, ${hi}]`);
    return v;
  };
  const bool = (k: string): boolean => {
    if (typeof b[k] !== 'boolean') throw fail(file, `"speaker_map.${k}" must be true or false`);
    return b[k] as boolean;
  };
  const hopSteps = int('hop_steps', W);
  const minVoicedSteps = int('min_voiced_steps', W);
  const gateDb = num('gate_db', -120, 0);
  // absent in a manifest before speakers 1.3.1: at once
  const lookahead = b['provisional_lookahead_steps'] === undefined ? 0 : int('provisional_lookahead_steps', W - 1, 0);
  // absent or "" in a manifest before speakers 1.4.0 (1.4.0 named it stream_whitening): plain embeddings everywhere
  const whiteningName = b['whitening'] ?? '';
  if (typeof whiteningName !== 'string') throw fail(file, '"speaker_map.whitening" must be a file name or ""');
  const whitening = whiteningName === '' ? undefined : loadWhitening(path.dirname(file), whiteningName, encoder.dim, file);
  const alikeMerge = parseAlikeMerge(b['alike_merge'], file);
  if (alikeMerge && !whitening) throw fail(file, '"speaker_map.alike_merge" needs "speaker_map.whitening"');
  // absent in a manifest before speakers 1.7.0: files score windows in the clustered view
  const whitenedScores = b['whitened_scores'] === undefined ? false : bool('whitened_scores');
  if (whitenedScores && !whitening) throw fail(file, '"speaker_map.whitened_scores" needs "speaker_map.whitening"');
  // absent in a manifest before speakers 1.9.0: no sparse windows
  const sparseMinVoicedSteps = b['sparse_min_voiced_steps'] === undefined ? undefined : int('sparse_min_voiced_steps', minVoicedSteps - 1);
  // absent before speakers 1.9.1: file jobs decide windows on their levels alone (music and noise embedded too)
  const fileSpeechGate = parseSpeechGate(b['file_speech_gate'], W, 'speaker_map.file_speech_gate', (problem) => fail(file, problem));
  return {
    encoder,
    schedule: { windowSteps: W, hopSteps, every: 1, minVoicedSteps, gateDb },
    ...(fileSpeechGate ? { fileSpeechGate } : {}),
    params: {
      hopSteps,
      windowSteps: W,
      segmentThreshold: num('segment_threshold', -1, 1),
      mergeThreshold: num('merge_threshold', -1, 1),
      refineIterations: int('refine_iterations', 10, 0),
      minSpeakerS: num('min_speaker_s', 0, 3600),
      minSpeakerShare: num('min_speaker_share', 0, 1),
      temperature: num('temperature', 0, 1000),
      onlineThreshold: num('online_threshold', -1, 1),
      // absent in a manifest before speakers 1.1.0: one fixed threshold
      onlineThresholdStep: b['online_threshold_step'] === undefined ? 0 : num('online_threshold_step', 0, 1),
    },
    defaultMaxSpeakers: int('max_speakers', MAX_SPEAKERS),
    centre: bool('center'),
    recluster: {
      maxSpeakers: int('recluster_max_speakers', MAX_SPEAKERS),
      minWindows: int('recluster_min_windows', 1000),
      every: int('recluster_every', 1000),
      history: int('recluster_history', 100000),
      // absent in a manifest before speakers 1.8.0: streams without a count never re-cluster
      freeMinWindows: b['free_recluster_min_windows'] === undefined ? 0 : int('free_recluster_min_windows', 100000, 0),
      // absent before speakers 1.8.1: the two-party streams' period
      freeEvery: b['free_recluster_every'] === undefined ? int('recluster_every', 1000) : int('free_recluster_every', 1000),
    },
    provisionalLookaheadSteps: lookahead,
    ...(whitening ? { whitening } : {}),
    ...(alikeMerge ? { alikeMerge } : {}),
    ...(whitenedScores ? { whitenedScores } : {}),
    ...(sparseMinVoicedSteps !== undefined ? { sparseMinVoicedSteps } : {}),
  };
}

/**
 * "speaker_map.alike_merge": {"bias", a weight per PAIR_FEATURES name, "min_probability" in (0, 1),
 * "max_windows" (an integer >= 1), optionally "keep_apart_below" in (0, 1) (speakers 1.7.0: the
 * clustering keeps apart two long clusters whose probability of one voice is under it)}.
 * Absent in a manifest before speakers 1.6.0 (1.5.0's "whitened_merge_threshold" is no longer read):
 * no merge after clustering.
 */
export function parseAlikeMerge(v: unknown, file: string): AlikeMergeRule | undefined {
  if (v === undefined) return undefined;
  const key = (k: string): string => `"speaker_map.alike_merge.${k}"`;
  if (!isObj(v)) throw fail(file, '"speaker_map.alike_merge" must be an object');
  const weight = (k: string): number => {
    if (!isNum(v[k])) throw fail(file, `${key(k)} must be a finite number`);
    return v[k];
  };
  const p = v['min_probability'];
  if (!isNum(p) || p <= 0 || p >= 1) throw fail(file, `${key('min_probability')} must be a number in (0, 1)`);
  const most = v['max_windows'];
  if (!(typeof most === 'number' && Number.isInteger(most) && most >= 1)) throw fail(file, `${key('max_windows')} must be an integer >= 1`);
  const apart = v['keep_apart_below'];
  if (apart !== undefined && (!isNum(apart) || apart <= 0 || apart >= 1)) throw fail(file, `${key('keep_apart_below')} must be a number in (0, 1)`);
  // absent before speakers 1.9.2: short clusters always join the closest speaker
  const shortBelow = v['short_speaker_below'];
  const shortMinS = v['short_speaker_min_s'];
  if ((shortBelow === undefined) !== (shortMinS === undefined)) throw fail(file, `${key('short_speaker_below')} and ${key('short_speaker_min_s')} go together`);
  if (shortBelow !== undefined && (!isNum(shortBelow) || shortBelow <= 0 || shortBelow >= 1)) throw fail(file, `${key('short_speaker_below')} must be a number in (0, 1)`);
  if (shortMinS !== undefined && (!isNum(shortMinS) || shortMinS < 0 || shortMinS > 3600)) throw fail(file, `${key('short_speaker_min_s')} must be a number in [0, 3600]`);
  if (shortBelow !== undefined && apart === undefined) throw fail(file, `${key('short_speaker_below')} needs ${key('keep_apart_below')}`);
  const rule: AlikeMergeRule = { bias: weight('bias'), weights: PAIR_FEATURES.map(weight), minLogit: Math.log(p / (1 - p)), maxWindows: most };
  return {
    ...rule,
    ...(apart === undefined ? {} : { apartLogit: Math.log(apart / (1 - apart)) }),
    ...(isNum(shortBelow) && isNum(shortMinS) ? { shortSpeaker: { minS: shortMinS, belowLogit: Math.log(shortBelow / (1 - shortBelow)) } } : {}),
  };
}
