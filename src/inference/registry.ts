/**
 * Model registry: reads and validates every `<modelsDir>/<name>/manifest.json`
 * (contract: docs/features.md). Any problem with a model directory fails loading with
 * an AurisError MODEL_LOAD_FAILED whose message names the offending file.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AurisError } from '../errors';
import { unknownModelError } from '../analysis/options';
import { BUILTIN_RAW_KEYS } from '../analysis/policies';
import { defaultModelsDir } from './env';
import { parseViews, type ModelViews } from './views';
import type { ProvisionalPlan } from './provisional-runner';
import { parseSpeakerMap, speakerKeys, MAX_SPEAKERS, SPEAKER_MAP_KIND, type SpeakerMapInfo } from '../speakers/manifest';

/** Front-end parameters the models must have been trained with (docs/features.md). */
export const FRONTEND = {
  kind: 'logmel',
  sample_rate: 16000,
  n_fft: 512,
  hop: 256,
  n_mels: 64,
  frames_per_step: 4,
} as const;
/** Feature frames per 64 ms step and mel bands per frame. */
export const FRAMES_PER_STEP = FRONTEND.frames_per_step;
export const N_MELS = FRONTEND.n_mels;
/** Floats of model input per 64 ms step. */
export const FLOATS_PER_STEP = FRAMES_PER_STEP * N_MELS;

export interface ModelManifest {
  name: string;
  version: string;
  placeholder: boolean;
  file: string;
  input: string;
  output: string;
  raw_keys: string[];
  features: Record<string, unknown>;
  context: { left_steps: number; right_steps: number };
  receptive_field_ms: number;
  lookahead_ms: number;
  training_data_sha256?: string | null;
  metrics?: Record<string, unknown>;
  /** Stateful graphs for live streams (training/export/streaming.py; validated by validateManifest). */
  streaming?: {
    file: string;
    start_file: string;
    start_steps: number;
    input: string;
    state_input: string;
    output: string;
    state_output: string;
    state_size: number;
    delay_steps: number;
  };
  [extra: string]: unknown;
}

/** A stateful graph: features and a state in, probabilities and the next state out. */
export interface StatefulGraphFile {
  /** Absolute path of the graph. */
  modelPath: string;
  inputName: string;
  stateInputName: string;
  outputName: string;
  stateOutputName: string;
  /** Floats of state per stream (a zero vector starts a stream). */
  stateSize: number;
  /** Output i of the steps fed is step i - delaySteps. */
  delaySteps: number;
}

/**
 * The stateful streaming graphs of a model (manifest "streaming"; training/export/streaming.py, docs/features.md):
 * modelPath the steady graph (stream.onnx), delaySteps the model's right context.
 */
export interface StreamingGraph extends StatefulGraphFile {
  /** Absolute path of the start graph (stream_start.onnx), exact at the signal start. */
  startModelPath: string;
  /** Calls whose first step is before this one use the start graph. */
  startSteps: number;
}

/**
 * A causal network that answers a model's live steps provisionally (`provisional.json` beside the manifest, its `head`:
 * training/recipes/causal.py ship): a stateful graph like the finals' stream.onnx, exact from a zero state, whose output
 * i answers step i - delaySteps of the steps fed. Streams run it instead of re-running the model over truncated windows.
 */
export interface ProvisionalHead extends StatefulGraphFile {
  /** Steps fed per call (a stream calls once every `stride` steps; 1: every step). */
  stride: number;
}

export interface ModelInfo {
  name: string;
  version: string;
  /** True for throwaway models that honour the contract but mean nothing. */
  placeholder: boolean;
  /** Output class order. */
  rawKeys: readonly string[];
  /** Steps before/after a step that influence its output. */
  context: { leftSteps: number; rightSteps: number };
  receptiveFieldMs: number;
  lookaheadMs: number;
  /** Absolute paths. */
  dir: string;
  manifestPath: string;
  modelPath: string;
  inputName: string;
  outputName: string;
  /** Present when the model ships a stateful streaming graph. */
  streaming?: StreamingGraph;
  /** Present when a pretrained encoder's view is fused with the network (views.ts). */
  views?: ModelViews;
  /**
   * Present for the speaker map (manifest kind "speaker_map", src/speakers): no network of its own;
   * modelPath/inputName/outputName are its encoder's.
   */
  speakerMap?: SpeakerMapInfo;
  /**
   * Present when the model's validation chose how it answers live streams provisionally
   * (`provisional.json` beside the manifest, its `shipped` plan: training/validate/provisional.py --write).
   */
  provisional?: ProvisionalPlan;
  /** Present when a causal head answers the model's live steps provisionally (`provisional.json` `head`). */
  provisionalHead?: ProvisionalHead;
  /**
   * Present when the model's validation measured its confidences on corpora it never heard (`calibration.json`
   * beside the manifest, its `shipped.temperature`: training/validate/calibration.py --write): a step's confidence
   * is the winning class's probability after this temperature (src/analysis/postprocess.ts).
   */
  confidenceTemperature?: number;
  manifest: ModelManifest;
}

export interface RegistryOptions {
  /** Default: $AURIS_MODELS_DIR, else <package root>/models. */
  modelsDir?: string;
  /**
   * Also open every ONNX file with onnxruntime and check input/output names and the number
   * of classes (async load() only; default true there).
   */
  verify?: boolean;
}

function fail(file: string, problem: string, cause?: unknown): AurisError {
  return new AurisError('MODEL_LOAD_FAILED', `${file}: ${problem}`, { file }, cause === undefined ? undefined : { cause });
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNonNegInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** Validates one parsed manifest; `dirName` is the model directory's name. Throws MODEL_LOAD_FAILED naming `file`. */
export function validateManifest(m: unknown, dirName: string, file: string): ModelManifest {
  if (!isObj(m)) throw fail(file, 'manifest must be a JSON object');
  const str = (k: string): string => {
    const v = m[k];
    if (typeof v !== 'string' || v.trim() === '') throw fail(file, `"${k}" must be a non-empty string`);
    return v;
  };
  const name = str('name');
  if (name !== dirName) throw fail(file, `"name" is ${JSON.stringify(name)} but the directory is ${JSON.stringify(dirName)}`);
  str('version');
  str('file');
  str('input');
  str('output');
  if (m['placeholder'] !== undefined && typeof m['placeholder'] !== 'boolean') throw fail(file, '"placeholder" must be true or false');
  const keys = m['raw_keys'];
  if (!Array.isArray(keys) || keys.length === 0 || !keys.every((k) => typeof k === 'string' && k !== '')) {
    throw fail(file, '"raw_keys" must be a non-empty array of class names');
  }
  if (new Set(keys).size !== keys.length) throw fail(file, '"raw_keys" has duplicates');
  const expected = BUILTIN_RAW_KEYS[name];
  if (expected && (keys.length !== expected.length || !expected.every((k) => keys.includes(k)))) {
    throw fail(file, `"raw_keys" of model ${name} must be ${JSON.stringify(expected)} (any order), got ${JSON.stringify(keys)}`);
  }
  if (['silence', 'no_speech', 'unknown'].some((k) => keys.includes(k))) {
    throw fail(file, '"raw_keys" must not use the reserved labels silence, no_speech, unknown');
  }
  const feats = m['features'];
  if (!isObj(feats)) throw fail(file, '"features" must be an object');
  for (const [k, v] of Object.entries(FRONTEND)) {
    if (feats[k] !== v) throw fail(file, `"features.${k}" must be ${JSON.stringify(v)} (the front end's value), got ${JSON.stringify(feats[k])}`);
  }
  const ctx = m['context'];
  if (!isObj(ctx) || !isNonNegInt(ctx['left_steps']) || !isNonNegInt(ctx['right_steps'])) {
    throw fail(file, '"context" must be {"left_steps": int >= 0, "right_steps": int >= 0}');
  }
  for (const k of ['receptive_field_ms', 'lookahead_ms']) {
    if (m[k] !== undefined && !(typeof m[k] === 'number' && (m[k] as number) >= 0)) throw fail(file, `"${k}" must be a number >= 0`);
  }
  const st = m['streaming'];
  if (st !== undefined) {
    if (!isObj(st)) throw fail(file, '"streaming" must be an object');
    for (const k of ['file', 'start_file', 'input', 'state_input', 'output', 'state_output']) {
      if (typeof st[k] !== 'string' || st[k] === '') throw fail(file, `"streaming.${k}" must be a non-empty string`);
    }
    if (!isNonNegInt(st['state_size']) || st['state_size'] === 0) throw fail(file, '"streaming.state_size" must be a positive integer');
    if (!isNonNegInt(st['start_steps'])) throw fail(file, '"streaming.start_steps" must be an integer >= 0');
    // The runner relies on this: the graphs' outputs lag by the lookahead, the last steps come from the whole-file model.
    if (st['delay_steps'] !== ctx['right_steps']) throw fail(file, '"streaming.delay_steps" must equal "context.right_steps"');
  }
  return m as ModelManifest;
}

/** Resolves a file named by a manifest: inside the model directory, a non-empty regular file. */
function modelFile(dir: string, name: string, manifestPath: string): string {
  const p = path.resolve(dir, name);
  if (path.relative(dir, p).startsWith('..')) throw fail(manifestPath, `${JSON.stringify(name)} must stay inside ${dir}`);
  let st: fs.Stats;
  try {
    st = fs.statSync(p);
  } catch (e) {
    throw fail(p, `model file missing (named by ${manifestPath})`, e);
  }
  if (!st.isFile() || st.size === 0) throw fail(p, 'model file is empty or not a regular file');
  return p;
}

/** Reads and validates one model directory. */
export function loadModelDir(dir: string): ModelInfo {
  const dirName = path.basename(dir);
  const manifestPath = path.join(dir, 'manifest.json');
  let text: string;
  try {
    text = fs.readFileSync(manifestPath, 'utf8');
  } catch (e) {
    throw fail(manifestPath, `cannot read manifest (${(e as Error).message})`, e);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw fail(manifestPath, `invalid JSON (${(e as Error).message})`, e);
  }
  if (isObj(parsed) && parsed['kind'] === SPEAKER_MAP_KIND) return loadSpeakerMapDir(dir, parsed, dirName, manifestPath);
  const m = validateManifest(parsed, dirName, manifestPath);
  const modelPath = modelFile(dir, m.file, manifestPath);
  const left = m.context.left_steps;
  const right = m.context.right_steps;
  const st = m.streaming;
  const streaming: StreamingGraph | undefined = st && {
    modelPath: modelFile(dir, st.file, manifestPath),
    startModelPath: modelFile(dir, st.start_file, manifestPath),
    startSteps: st.start_steps,
    inputName: st.input,
    stateInputName: st.state_input,
    outputName: st.output,
    stateOutputName: st.state_output,
    stateSize: st.state_size,
    delaySteps: st.delay_steps,
  };
  const views = parseViews(m['views'], path.dirname(dir), manifestPath, m.raw_keys.length);
  const provisionalReport = readValidationReport(dir, 'provisional.json');
  const provisional = readProvisionalPlan(provisionalReport, left, right);
  const provisionalHead = readProvisionalHead(provisionalReport, right);
  const temperature = readConfidenceTemperature(dir);
  return {
    name: m.name,
    version: m.version,
    placeholder: m.placeholder === true,
    rawKeys: Object.freeze([...m.raw_keys]),
    context: { leftSteps: left, rightSteps: right },
    receptiveFieldMs: typeof m.receptive_field_ms === 'number' ? m.receptive_field_ms : (left + right + 1) * 64,
    lookaheadMs: typeof m.lookahead_ms === 'number' ? m.lookahead_ms : right * 64,
    dir,
    manifestPath,
    modelPath,
    inputName: m.input,
    outputName: m.output,
    ...(streaming ? { streaming } : {}),
    ...(views ? { views } : {}),
    ...(provisional ? { provisional } : {}),
    ...(provisionalHead ? { provisionalHead } : {}),
    ...(temperature !== undefined ? { confidenceTemperature: temperature } : {}),
    manifest: m,
  };
}

interface ValidationReport {
  file: string;
  shipped: unknown;
  /** The whole document (provisional.json's `head` lies beside `shipped`). */
  doc: Record<string, unknown>;
}

/**
 * A validation report beside a model's manifest (`<dir>/<name>`, written by training/validate/*.py --write): its path
 * and its `shipped` value, the part the service reads (the rest is for the card). None without the file.
 */
function readValidationReport(dir: string, name: string): ValidationReport | undefined {
  const file = path.join(dir, name);
  if (!fs.existsSync(file)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw fail(file, `invalid JSON (${(e as Error).message})`, e);
  }
  return { file, shipped: isObj(parsed) ? parsed['shipped'] : undefined, doc: isObj(parsed) ? parsed : {} };
}

/** Temperatures outside this range would be a broken file, not a calibration. */
const TEMPERATURE_RANGE = [0.05, 100] as const;

/**
 * The confidence temperature a model's validation chose: `<dir>/calibration.json` `shipped.temperature`. None
 * without the file (the confidence is then the winning probability as it is).
 */
function readConfidenceTemperature(dir: string): number | undefined {
  const report = readValidationReport(dir, 'calibration.json');
  if (!report) return undefined;
  const { file, shipped } = report;
  const t = isObj(shipped) ? shipped['temperature'] : undefined;
  if (typeof t !== 'number' || !Number.isFinite(t) || t < TEMPERATURE_RANGE[0] || t > TEMPERATURE_RANGE[1]) {
    throw fail(file, `"shipped.temperature" must be a number from ${TEMPERATURE_RANGE[0]} to ${TEMPERATURE_RANGE[1]}, got ${JSON.stringify(t)}`);
  }
  return t;
}

/**
 * The provisional plan a model's validation chose: `<dir>/provisional.json` `shipped` {lookahead_steps, stride_steps,
 * left_context_steps}, within the model's context. None without the file (provisionalPlan's defaults apply).
 */
function readProvisionalPlan(report: ValidationReport | undefined, leftSteps: number, rightSteps: number): ProvisionalPlan | undefined {
  if (!report) return undefined;
  const { file, shipped } = report;
  if (!isObj(shipped)) throw fail(file, '"shipped" must be an object {lookahead_steps, stride_steps, left_context_steps}');
  const step = (key: string, min: number, max: number): number => {
    const v = shipped[key];
    if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) throw fail(file, `"shipped.${key}" must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
    return v as number;
  };
  return { lookahead: step('lookahead_steps', 0, rightSteps), stride: step('stride_steps', 1, 256), leftContext: step('left_context_steps', 0, leftSteps) };
}

/**
 * The causal head a model's provisional validation shipped: `<dir>/provisional.json` `head` {file, input, state_input,
 * output, state_output, state_size, delay_steps, stride_steps (default 1)}, its lookahead within the model's. None
 * without one.
 */
function readProvisionalHead(report: ValidationReport | undefined, rightSteps: number): ProvisionalHead | undefined {
  const head = report?.doc['head'];
  if (!report || head === undefined) return undefined;
  const { file } = report;
  if (!isObj(head)) throw fail(file, '"head" must be an object {file, input, state_input, output, state_output, state_size, delay_steps}');
  const name = (key: string): string => {
    const v = head[key];
    if (typeof v !== 'string' || v.trim() === '') throw fail(file, `"head.${key}" must be a non-empty string`);
    return v;
  };
  const stateSize = head['state_size'];
  if (!Number.isInteger(stateSize) || (stateSize as number) < 1) throw fail(file, `"head.state_size" must be a positive integer, got ${JSON.stringify(stateSize)}`);
  const delay = head['delay_steps'];
  if (!Number.isInteger(delay) || (delay as number) < 0 || (delay as number) > rightSteps) {
    throw fail(file, `"head.delay_steps" must be an integer from 0 to ${rightSteps} (the model's lookahead), got ${JSON.stringify(delay)}`);
  }
  const stride = head['stride_steps'] ?? 1;
  if (!Number.isInteger(stride) || (stride as number) < 1 || (stride as number) > 64) throw fail(file, `"head.stride_steps" must be an integer from 1 to 64, got ${JSON.stringify(stride)}`);
  return {
    stride: stride as number,
    modelPath: modelFile(path.dirname(file), name('file'), file),
    inputName: name('input'),
    stateInputName: name('state_input'),
    outputName: name('output'),
    stateOutputName: name('state_output'),
    stateSize: stateSize as number,
    delaySteps: delay as number,
  };
}

/** A speaker-map model (src/speakers/manifest.ts): raw keys speaker_1..speaker_MAX_SPEAKERS, lookahead one window. */
function loadSpeakerMapDir(dir: string, m: Record<string, unknown>, dirName: string, manifestPath: string): ModelInfo {
  for (const k of ['name', 'version']) {
    if (typeof m[k] !== 'string' || (m[k] as string).trim() === '') throw fail(manifestPath, `"${k}" must be a non-empty string`);
  }
  if (m['name'] !== dirName) throw fail(manifestPath, `"name" is ${JSON.stringify(m['name'])} but the directory is ${JSON.stringify(dirName)}`);
  if (m['placeholder'] !== undefined && typeof m['placeholder'] !== 'boolean') throw fail(manifestPath, '"placeholder" must be true or false');
  const speakerMap = parseSpeakerMap(m, path.dirname(dir), manifestPath);
  // a step is decided once the last window covering it (starting at or before it) has ended
  const right = speakerMap.schedule.windowSteps - 1;
  return {
    name: dirName,
    version: m['version'] as string,
    placeholder: m['placeholder'] === true,
    rawKeys: Object.freeze(speakerKeys(MAX_SPEAKERS)),
    context: { leftSteps: 0, rightSteps: right },
    receptiveFieldMs: speakerMap.schedule.windowSteps * 64,
    lookaheadMs: right * 64,
    dir,
    manifestPath,
    modelPath: speakerMap.encoder.modelPath,
    inputName: speakerMap.encoder.inputName,
    outputName: speakerMap.encoder.outputName,
    speakerMap,
    manifest: m as unknown as ModelManifest,
  };
}

/** Opens an ONNX file with onnxruntime on the calling thread; not loadable -> MODEL_LOAD_FAILED naming it. */
async function openSession(file: string, ort: typeof import('onnxruntime-node')): Promise<import('onnxruntime-node').InferenceSession> {
  try {
    return await ort.InferenceSession.create(file, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  } catch (e) {
    throw fail(file, `not a loadable ONNX model (${(e as Error).message})`, e);
  }
}

/** Opens a pretrained encoder (views.ts) and checks that one window of silence gives `dim` floats. */
async function verifyEncoder(e: import('./views').EncoderInfo, ort: typeof import('onnxruntime-node')): Promise<void> {
  const session = await openSession(e.modelPath, ort);
  try {
    let out;
    try {
      const x = new ort.Tensor('float32', new Float32Array(e.pcmFloats), [1, e.pcmFloats]);
      out = (await session.run({ [e.inputName]: x }))[e.outputName];
    } catch (err) {
      throw fail(e.modelPath, `fails on one window of ${e.pcmFloats} samples (${(err as Error).message})`, err);
    }
    const n = out?.dims.reduce((a, b) => a * b, 1) ?? 0;
    if (n !== e.dim) throw fail(e.modelPath, `output "${e.outputName}" has ${n} values for one window, expected ${e.dim} (manifest "dim")`);
  } finally {
    await session.release();
  }
}

/**
 * Opens a model's ONNX file with onnxruntime (on the calling thread) and checks that it has
 * the manifest's input/output and produces [1, 1, C] probabilities for one step of zeros.
 */
export async function verifyModel(info: ModelInfo): Promise<void> {
  // Loaded lazily: the registry itself must not need the native runtime.
  const ort = await import('onnxruntime-node');
  for (const v of info.views?.views ?? []) await verifyEncoder(v.encoder, ort);
  if (info.speakerMap) return verifyEncoder(info.speakerMap.encoder, ort);
  const session = await openSession(info.modelPath, ort);
  try {
    if (!session.inputNames.includes(info.inputName)) {
      throw fail(info.modelPath, `has no input "${info.inputName}" (inputs: ${session.inputNames.join(', ')})`);
    }
    if (!session.outputNames.includes(info.outputName)) {
      throw fail(info.modelPath, `has no output "${info.outputName}" (outputs: ${session.outputNames.join(', ')})`);
    }
    let out;
    try {
      const x = new ort.Tensor('float32', new Float32Array(FLOATS_PER_STEP), [1, FRAMES_PER_STEP, N_MELS]);
      out = (await session.run({ [info.inputName]: x }))[info.outputName];
    } catch (e) {
      throw fail(info.modelPath, `fails on a [1, ${FRAMES_PER_STEP}, ${N_MELS}] input (${(e as Error).message})`, e);
    }
    const dims = out?.dims ?? [];
    if (dims.length !== 3 || dims[0] !== 1 || dims[1] !== 1 || dims[2] !== info.rawKeys.length) {
      throw fail(info.modelPath, `output "${info.outputName}" has shape [${dims.join(', ')}] for one step, expected [1, 1, ${info.rawKeys.length}] (raw_keys)`);
    }
  } finally {
    await session.release();
  }
  if (info.streaming) {
    await verifyStreamingGraph(info, info.streaming, info.streaming.startModelPath, ort);
    await verifyStreamingGraph(info, info.streaming, info.streaming.modelPath, ort);
  }
  if (info.provisionalHead) await verifyStreamingGraph(info, info.provisionalHead, info.provisionalHead.modelPath, ort);
}

/** Opens a streaming graph and checks one step from a zero state: probabilities [1, 1, C] and a state of the declared size. */
async function verifyStreamingGraph(info: ModelInfo, g: StatefulGraphFile, file: string, ort: typeof import('onnxruntime-node')): Promise<void> {
  const session = await openSession(file, ort);
  try {
    let out;
    try {
      const x = new ort.Tensor('float32', new Float32Array(FLOATS_PER_STEP), [1, FRAMES_PER_STEP, N_MELS]);
      const state = new ort.Tensor('float32', new Float32Array(g.stateSize), [1, g.stateSize]);
      out = await session.run({ [g.inputName]: x, [g.stateInputName]: state });
    } catch (e) {
      throw fail(file, `fails on one step from a zero state of ${g.stateSize} floats (${(e as Error).message})`, e);
    }
    const probs = out[g.outputName]?.dims ?? [];
    const state = out[g.stateOutputName]?.dims ?? [];
    if (probs.length !== 3 || probs[0] !== 1 || probs[1] !== 1 || probs[2] !== info.rawKeys.length) {
      throw fail(file, `output "${g.outputName}" has shape [${probs.join(', ')}] for one step, expected [1, 1, ${info.rawKeys.length}]`);
    }
    if (state.length !== 2 || state[0] !== 1 || state[1] !== g.stateSize) {
      throw fail(file, `output "${g.stateOutputName}" has shape [${state.join(', ')}], expected [1, ${g.stateSize}]`);
    }
  } finally {
    await session.release();
  }
}

export class ModelRegistry {
  private readonly models: Map<string, ModelInfo>;

  private constructor(readonly modelsDir: string, models: ModelInfo[]) {
    this.models = new Map(models.map((m) => [m.name, m]));
  }

  /** Reads every manifest synchronously (no ONNX check). */
  static loadSync(options: RegistryOptions = {}): ModelRegistry {
    const dir = path.resolve(options.modelsDir ?? defaultModelsDir());
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (e) {
      throw fail(dir, `cannot read the models directory (${(e as Error).message})`, e);
    }
    const models: ModelInfo[] = [];
    for (const ent of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (!ent.isDirectory() || ent.name.startsWith('.')) continue;
      const sub = path.join(dir, ent.name);
      // Directories without a manifest (e.g. shared assets) are not models.
      if (!fs.existsSync(path.join(sub, 'manifest.json'))) continue;
      models.push(loadModelDir(sub));
    }
    return new ModelRegistry(dir, models);
  }

  /** Reads every manifest and, unless `verify: false`, opens every ONNX file to check it. */
  static async load(options: RegistryOptions = {}): Promise<ModelRegistry> {
    const reg = ModelRegistry.loadSync(options);
    if (options.verify !== false) {
      for (const m of reg.list()) await verifyModel(m);
    }
    return reg;
  }

  /** Model names, sorted. */
  names(): string[] {
    return [...this.models.keys()].sort();
  }

  list(): ModelInfo[] {
    return this.names().map((n) => this.models.get(n)!);
  }

  has(name: string): boolean {
    return this.models.has(name);
  }

  /** The model, or UNKNOWN_MODEL listing the valid names. */
  get(name: string): ModelInfo {
    const m = this.models.get(name);
    if (!m) throw unknownModelError([name], this.names());
    return m;
  }

  /** Several models at once; every unknown name is reported in one UNKNOWN_MODEL error. */
  resolve(names: readonly string[]): ModelInfo[] {
    const unknown = names.filter((n) => !this.models.has(n));
    if (unknown.length > 0) throw unknownModelError(unknown, this.names());
    return names.map((n) => this.models.get(n)!);
  }

  /** Raw keys of every model, keyed by name (what post-processing needs). */
  rawKeys(): Record<string, readonly string[]> {
    const out: Record<string, readonly string[]> = {};
    for (const m of this.models.values()) out[m.name] = m.rawKeys;
    return out;
  }

  /** The confidence temperature of every model that has one (calibration.json). */
  confidenceTemperatures(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const m of this.models.values()) if (m.confidenceTemperature !== undefined) out[m.name] = m.confidenceTemperature;
    return out;
  }
}

/** Model names with a manifest under `modelsDir` (models/<name>/manifest.json), sorted; none when the directory is missing. */
export function modelsIn(modelsDir: string): string[] {
  if (!fs.existsSync(modelsDir)) return [];
  return fs
    .readdirSync(modelsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(modelsDir, d.name, 'manifest.json')))
    .map((d) => d.name)
    .sort();
}
