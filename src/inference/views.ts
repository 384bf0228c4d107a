/**
 * Encoder views of a model (manifest "views"): pretrained encoders (models/encoders/<name>/, run
 * on the same fixed windows of voiced audio) each with a linear head of ours on its embeddings,
 * fused with the model's own per-step network. Gender 2.0 reads a speaker's gender this way
 * (its MODEL_CARD.md); the rule takes any number of classes (arousal and emotions views were
 * tried, not shipped: their cards). docs/features.md describes the window schedule and the fusion.
 *
 *   manifest.views = {
 *     schedule: { window_steps, every, min_voiced_steps, gate_db, speech_gate?: { steps, min_speech_steps, max_non_speech_steps? } },
 *     encoders: [ { encoder: "speaker", head: { weights, bias } }, ... ],
 *     fusion: { net, views: number[], bias },
 *     speaker_heads?: [ { encoder: "campplus", head: { weights, bias } }, ... ]
 *   }
 *
 * `speaker_heads`: heads of ours on other encoders' embeddings, never run per step: a speaker map that embeds with
 * one of those encoders reads each speaker's class from its pooled windows (src/speakers/speaker-gender.ts; gender
 * 2.3's view hears up to 4.2 kHz, the speaker map the full band).
 *
 * Two classes: a head is { weights: number[dim], bias: number } giving the log-odds of raw_keys[1]
 * against raw_keys[0], and fusion.bias is a number: log-odds = net * L_net + sum views[i] * L_i + bias.
 * C > 2 classes: a head is { weights: number[C][dim], bias: number[C] } giving one logit per class,
 * fusion.bias is number[C], and the fused probabilities are
 * softmax_c(net * log p_net,c + sum views[i] * z_i,c + bias_c) (the two-class rule is its special case).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AurisError } from '../errors';
import type { EncoderPoolModel } from './pool';

/** Samples per 64 ms step at 16 kHz. */
export const STEP_SAMPLES = 1024;

export interface EncoderInfo extends EncoderPoolModel {
  version: string;
  dir: string;
  manifestPath: string;
  /** Steps per encoder window (pcmFloats / STEP_SAMPLES). */
  windowSteps: number;
  /**
   * Manifest "quantised_from": the encoder (`encoder:<name>`) this one is a quantised copy of. Its embeddings
   * live in that encoder's space, so a head fitted on either reads the other's (speaker-gender.ts).
   */
  quantisedFrom?: string;
  manifest: Record<string, unknown>;
}

/** Which windows the encoder runs on (encoder-stage.ts). */
export interface ViewSchedule {
  /** Window k covers steps [k * hop, k * hop + windowSteps). */
  windowSteps: number;
  /** Steps between window starts (default windowSteps: windows side by side; the speaker map overlaps them). */
  hopSteps?: number;
  /** Within a run of voiced windows, the encoder runs on every `every`-th one; the others reuse its result. */
  every: number;
  /** Fewer voiced steps than this: the window is not embedded and ends the run. */
  minVoicedSteps: number;
  /** A step is voiced when its level is at least this, dBFS. */
  gateDb: number;
  /**
   * Also needs the speech model: a window is embedded only when at least `minSpeechSteps` of its
   * first `steps` steps are speech (the speech model's argmax) and, where `maxNonSpeechSteps` is
   * given, at most that many of them are voiced yet not speech (music, noise); else it ends the
   * run. The first steps only, so that their speech outputs (776 ms lookahead) are in by the
   * window's end and a live stream's steps wait no longer than before (gender 2.1.1; the speaker
   * map's file gate, speakers 1.9.1, asks only the second: a turn's first window, silent at its start, passes).
   */
  speechGate?: SpeechGate;
}

export interface SpeechGate {
  steps: number;
  minSpeechSteps: number;
  maxNonSpeechSteps?: number;
}

/** Greatest common divisor (window schedules and call boundaries). */
export const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * The models whose encoder windows are speech-gated: they need the speech model's per-step
 * decisions (ChannelViews.attachSpeech). Views are gated in files and streams alike; a speaker
 * map's `fileSpeechGate` only in file jobs (`files`).
 */
export function speechGatedModels<M extends { views?: ModelViews | undefined; speakerMap?: { fileSpeechGate?: SpeechGate } | undefined }>(
  models: readonly M[],
  { files = false } = {},
): M[] {
  return models.filter((m) => m.views?.schedule.speechGate !== undefined || (files && m.speakerMap?.fileSpeechGate !== undefined));
}

/** One encoder and our head on its embeddings: one logit per class (two classes: class 0's row is zero). */
export interface EncoderView {
  encoder: EncoderInfo;
  /** weights [classes][dim] row-major, bias [classes]. */
  head: { weights: Float32Array; bias: Float32Array };
}

export interface ModelViews {
  schedule: ViewSchedule;
  /** Every encoder embeds the same windows (the schedule's). */
  views: EncoderView[];
  /** Heads on other encoders' embeddings, for a speaker's pooled windows only (manifest "speaker_heads"). */
  speakerHeads: EncoderView[];
  /** Weights of the network's log-probabilities and of each view's logits, and the per-class bias. */
  fusion: { net: number; views: number[]; bias: Float32Array };
  /** Classes (the model's raw keys). */
  classes: number;
}

function fail(file: string, problem: string, cause?: unknown): AurisError {
  return new AurisError('MODEL_LOAD_FAILED', `${file}: ${problem}`, { file }, cause === undefined ? undefined : { cause });
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isPosInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0;

/** Reads models/encoders/<name>/manifest.json (kind "pcm_window_encoder"). */
export function loadEncoder(modelsDir: string, name: string, from: string): EncoderInfo {
  if (!/^[a-z0-9_-]+$/.test(name)) throw fail(from, `"views.encoder" must be a plain name, got ${JSON.stringify(name)}`);
  const dir = path.join(modelsDir, 'encoders', name);
  const manifestPath = path.join(dir, 'manifest.json');
  let m: unknown;
  try {
    m = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  } catch (e) {
    throw fail(manifestPath, `cannot read the encoder manifest named by ${from} (${(e as Error).message})`, e);
  }
  if (!isObj(m) || m['kind'] !== 'pcm_window_encoder') throw fail(manifestPath, '"kind" must be "pcm_window_encoder"');
  for (const k of ['name', 'version', 'file', 'input', 'output']) {
    if (typeof m[k] !== 'string' || m[k] === '') throw fail(manifestPath, `"${k}" must be a non-empty string`);
  }
  if (m['name'] !== name) throw fail(manifestPath, `"name" must be ${JSON.stringify(name)}`);
  if (!isPosInt(m['window_samples']) || m['window_samples'] % STEP_SAMPLES !== 0) {
    throw fail(manifestPath, `"window_samples" must be a positive multiple of ${STEP_SAMPLES}`);
  }
  if (!isPosInt(m['dim'])) throw fail(manifestPath, '"dim" must be a positive integer');
  if (m['max_batch'] !== undefined && !isPosInt(m['max_batch'])) throw fail(manifestPath, '"max_batch" must be a positive integer when given');
  const quantisedFrom = m['quantised_from'];
  if (quantisedFrom !== undefined && (typeof quantisedFrom !== 'string' || !/^[a-z0-9_-]+$/.test(quantisedFrom) || quantisedFrom === name)) {
    throw fail(manifestPath, '"quantised_from" must name another encoder when given');
  }
  const modelPath = path.resolve(dir, m['file'] as string);
  if (path.relative(dir, modelPath).startsWith('..') || !fs.existsSync(modelPath) || !fs.statSync(modelPath).isFile()) {
    throw fail(manifestPath, `encoder file ${JSON.stringify(m['file'])} is missing`);
  }
  return {
    name: `encoder:${name}`,
    version: m['version'] as string,
    dir,
    manifestPath,
    modelPath,
    inputName: m['input'] as string,
    outputName: m['output'] as string,
    rawKeys: [],
    pcmFloats: m['window_samples'],
    dim: m['dim'],
    ...(m['max_batch'] !== undefined ? { maxBatch: m['max_batch'] as number } : {}),
    ...(typeof quantisedFrom === 'string' ? { quantisedFrom: `encoder:${quantisedFrom}` } : {}),
    windowSteps: m['window_samples'] / STEP_SAMPLES,
    manifest: m,
  };
}

/**
 * [classes][width] numbers flattened, or undefined when malformed. A row of width 1 is a plain
 * number; two classes may give class 1's row alone (class 0's is then zero).
 */
function classRows(v: unknown, classes: number, width: number): Float32Array | undefined {
  const asRow = (r: unknown): number[] | undefined =>
    width === 1 && isNum(r) ? [r] : Array.isArray(r) && r.length === width && r.every(isNum) ? r : undefined;
  const single = classes === 2 ? asRow(v) : undefined;
  const rows = single ? [new Array<number>(width).fill(0), single] : Array.isArray(v) && v.length === classes ? v.map(asRow) : undefined;
  if (!rows || rows.some((r) => r === undefined)) return undefined;
  return Float32Array.from((rows as number[][]).flat());
}

/**
 * A schedule's "speech_gate": {steps, min_speech_steps, max_non_speech_steps?} (absent: no gate;
 * gender 2.1.1 in "views.schedule"; "speaker_map.file_speech_gate", speakers 1.9.1). `where` names
 * the key in errors; `fail` makes the model's load error.
 */
export function parseSpeechGate(g: unknown, windowSteps: number, where: string, fail: (problem: string) => Error): SpeechGate | undefined {
  if (g === undefined) return undefined;
  const count = (v: unknown, max: number): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;
  if (!isObj(g) || !isPosInt(g['steps']) || g['steps'] > windowSteps || !count(g['min_speech_steps'], g['steps'])
    || (g['max_non_speech_steps'] !== undefined && !count(g['max_non_speech_steps'], g['steps']))) {
    throw fail(`"${where}" must be {steps: 1..${windowSteps}, min_speech_steps: 0..steps, max_non_speech_steps?: 0..steps}`);
  }
  const max = g['max_non_speech_steps'];
  return { steps: g['steps'], minSpeechSteps: g['min_speech_steps'], ...(max !== undefined ? { maxNonSpeechSteps: max as number } : {}) };
}

/** Parses and checks a model manifest's "views" (undefined: the model has none). */
export function parseViews(raw: unknown, modelsDir: string, file: string, classes: number): ModelViews | undefined {
  if (raw === undefined) return undefined;
  if (!isObj(raw)) throw fail(file, '"views" must be an object');
  if (classes < 2) throw fail(file, '"views" needs a model of at least two classes');
  const shape = (dim: number | string): string => (classes === 2 ? `{weights: ${dim} numbers, bias}` : `{weights: ${classes} rows of ${dim} numbers, bias: ${classes} numbers}`);
  const heads = (key: string, list: unknown): EncoderView[] => {
    if (!Array.isArray(list)) throw fail(file, `"views.${key}" must be an array`);
    return list.map((v: unknown, i): EncoderView => {
      if (!isObj(v)) throw fail(file, `"views.${key}[${i}]" must be an object`);
      const encoder = loadEncoder(modelsDir, String(v['encoder']), file);
      const h = v['head'];
      const weights = isObj(h) ? classRows(h['weights'], classes, encoder.dim) : undefined;
      const bias = isObj(h) ? classRows(h['bias'], classes, 1) : undefined;
      if (!weights || !bias) throw fail(file, `"views.${key}[${i}].head" must be ${shape(encoder.dim)}`);
      return { encoder, head: { weights, bias } };
    });
  };
  const views = heads('encoders', raw['encoders']);
  if (views.length === 0) throw fail(file, '"views.encoders" must be a non-empty array');
  const speakerHeads = raw['speaker_heads'] === undefined ? [] : heads('speaker_heads', raw['speaker_heads']);
  const windowSteps = views[0]!.encoder.windowSteps;
  if (views.some((v) => v.encoder.windowSteps !== windowSteps)) throw fail(file, '"views.encoders" must share one window length');
  const s = raw['schedule'];
  if (!isObj(s) || !isPosInt(s['every']) || !isPosInt(s['min_voiced_steps']) || !isNum(s['gate_db'])) {
    throw fail(file, '"views.schedule" must be {window_steps, every, min_voiced_steps, gate_db}');
  }
  if (s['window_steps'] !== windowSteps) throw fail(file, `"views.schedule.window_steps" must be the encoders' ${windowSteps}`);
  if ((s['min_voiced_steps'] as number) > windowSteps) throw fail(file, '"views.schedule.min_voiced_steps" exceeds the window');
  const speechGate = parseSpeechGate(s['speech_gate'], windowSteps, 'views.schedule.speech_gate', (problem) => fail(file, problem));
  const f = raw['fusion'];
  const fusionBias = isObj(f) ? classRows(f['bias'], classes, 1) : undefined;
  if (!isObj(f) || !isNum(f['net']) || !fusionBias || !Array.isArray(f['views']) || f['views'].length !== views.length || !f['views'].every(isNum)) {
    throw fail(file, `"views.fusion" must be {net, views: ${views.length} numbers, bias${classes === 2 ? '' : `: ${classes} numbers`}}`);
  }
  return {
    schedule: { windowSteps, every: s['every'], minVoicedSteps: s['min_voiced_steps'], gateDb: s['gate_db'], ...(speechGate ? { speechGate } : {}) },
    views,
    speakerHeads,
    fusion: { net: f['net'], views: f['views'] as number[], bias: fusionBias },
    classes,
  };
}
