/**
 * Scoring of `auris eval`: turns per-step model outputs of labelled files into step-level
 * and utterance-level scores. Pure code, no I/O (tested with constructed inputs).
 *
 * - Step level: every non-silent 64 ms step of a row's file (or of its segment) counts once,
 *   with the row's label as truth and the argmax of the model's raw probabilities as the
 *   prediction (the model's own decision; the service's `no_speech` / `unknown` labels are
 *   counted separately, see `serviceLabels`).
 * - Utterance level: one decision per row from its voiced steps, by the mean of their
 *   probabilities ("mean") and by majority vote of their step predictions ("majority").
 * - Speech task: speech vs non-speech on the same steps, ours (argmax == speech) and, when
 *   given, Silero VAD's (mean window probability of the step >= 0.5).
 */
import { BinaryCounts, ConfusionMatrix, argmax, majority } from './metrics';
import type { EvalRow, EvalTask } from './csv';

export const STEP_MS = 64;

/** Per-step outputs of one analysed channel (what the scorer needs from the pipeline). */
export interface FileSteps {
  steps: number;
  /** 1/true where the step is silent by the level gate (the service labels it `silence`). */
  silent: ArrayLike<number | boolean>;
  /** Row-major [steps][C] probabilities per model, class order = rawKeys[model]. */
  probs: Readonly<Record<string, ArrayLike<number>>>;
  rawKeys: Readonly<Record<string, readonly string[]>>;
  /** The service's label per step and model (e.g. `no_speech`, `unknown`), when known. */
  labels?: Readonly<Record<string, readonly string[]>>;
  /** Silero VAD speech decision per step (1 = speech), when available. */
  silero?: ArrayLike<number>;
}

/** Steps of a row: those whose middle lies in [startMs, endMs) (the whole file by default). */
export function rowSteps(row: Pick<EvalRow, 'startMs' | 'endMs'>, steps: number): [number, number] {
  const start = row.startMs ?? 0;
  const end = row.endMs ?? Infinity;
  // middle of step s: 64 s + 32 >= start  <=>  s >= (start - 32) / 64
  const from = Math.min(steps, Math.max(0, Math.ceil((start - STEP_MS / 2) / STEP_MS)));
  const to = Math.min(steps, Math.ceil((end - STEP_MS / 2) / STEP_MS));
  return [from, Math.max(from, to)];
}

export interface BinaryReport {
  tp: number;
  fp: number;
  fn: number;
  tn: number;
  precision: number;
  recall: number;
  f1: number;
  accuracy: number;
}

export interface TaskReport {
  task: EvalTask;
  labels: string[];
  rows: number;
  /** Rows without a single voiced step in their range (left out of every score). */
  rowsWithoutVoicedSteps: number;
  /** Steps skipped as silent. */
  silentSteps: number;
  step: {
    n: number;
    accuracy: number;
    uar: number;
    macroF1: number;
    perClass: { label: string; support: number; precision: number; recall: number; f1: number }[];
    confusion: { labels: string[]; counts: number[][] };
  };
  utterance: {
    n: number;
    mean: { accuracy: number; uar: number; confusion: { labels: string[]; counts: number[][] } };
    majority: { accuracy: number; uar: number; confusion: { labels: string[]; counts: number[][] } };
  };
  /** How the service itself labelled the voiced steps (e.g. gender `unknown` / `no_speech`). */
  serviceLabels?: Record<string, number>;
  /**
   * Per group of rows (the folder of the row's path as written in the CSV, e.g.
   * `audio/ravdess`): voiced steps, step accuracy, and for the speech task how often ours and
   * Silero called those steps speech, and their speech F1.
   */
  byGroup: {
    group: string;
    rows: number;
    steps: number;
    stepAccuracy: number;
    /** Speech task: share of the steps called speech (recall on speech rows, false-alarm rate on others). */
    speechRate?: number;
    sileroSpeechRate?: number;
    speechF1?: number;
    sileroSpeechF1?: number;
  }[];
  /** Speech task only: speech vs non-speech on the voiced steps. */
  speechVsNonSpeech?: {
    steps: number;
    ours: BinaryReport;
    /** Same steps, Silero VAD (only steps where Silero ran). */
    silero?: BinaryReport & { steps: number };
    /** Ours restricted to the steps Silero also scored (equal to `ours` when Silero ran on every file). */
    oursOnSileroSteps?: BinaryReport;
  };
}

/** Share of the steps called positive. */
function rate(b: BinaryCounts): number {
  return b.total === 0 ? NaN : (b.tp + b.fp) / b.total;
}

/** Group of a row: the folder of its path as written in the CSV ('.' for none). */
export function groupOf(rawPath: string): string {
  const p = rawPath.replace(/\\/g, '/');
  const i = p.lastIndexOf('/');
  return i < 0 ? '.' : p.slice(0, i);
}

export class TaskScorer {
  readonly step: ConfusionMatrix;
  readonly uttMean: ConfusionMatrix;
  readonly uttMajority: ConfusionMatrix;
  readonly oursBinary = new BinaryCounts();
  readonly sileroBinary = new BinaryCounts();
  readonly oursOnSilero = new BinaryCounts();
  rows = 0;
  rowsWithoutVoicedSteps = 0;
  silentSteps = 0;
  readonly serviceLabels = new Map<string, number>();
  private sileroSeen = false;
  private readonly groups = new Map<string, { rows: number; steps: number; correct: number; ours: BinaryCounts; silero: BinaryCounts }>();

  constructor(readonly task: EvalTask, readonly labels: readonly string[]) {
    this.step = new ConfusionMatrix(labels);
    this.uttMean = new ConfusionMatrix(labels);
    this.uttMajority = new ConfusionMatrix(labels);
  }

  /** Scores one CSV row against the outputs of its file. */
  add(row: Pick<EvalRow, 'task' | 'label' | 'startMs' | 'endMs'> & { rawPath?: string }, file: FileSteps): void {
    if (row.task !== this.task) throw new Error(`row of task ${row.task} given to the ${this.task} scorer`);
    const model = this.task;
    const keys = file.rawKeys[model];
    const probs = file.probs[model];
    if (!keys || !probs) throw new Error(`no ${model} model output for this file`);
    const C = keys.length;
    if (probs.length < file.steps * C) throw new Error(`${model} output has ${probs.length} values, expected ${file.steps} x ${C}`);
    // the model's classes, in output order, are the task's labels
    const keyLabel = keys;
    for (const k of keyLabel) if (!this.labels.includes(k)) throw new Error(`model ${model} has class "${k}" that the ${model} task does not know`);

    this.rows++;
    const groupName = row.rawPath !== undefined ? groupOf(row.rawPath) : '';
    let group = this.groups.get(groupName);
    if (!group) {
      group = { rows: 0, steps: 0, correct: 0, ours: new BinaryCounts(), silero: new BinaryCounts() };
      this.groups.set(groupName, group);
    }
    group.rows++;
    const [from, to] = rowSteps(row, file.steps);
    const sum = new Float64Array(C);
    const stepPreds: string[] = [];
    const serviceLabels = file.labels?.[model];
    for (let s = from; s < to; s++) {
      if (file.silent[s]) {
        this.silentSteps++;
        continue;
      }
      const p = Array.from({ length: C }, (_, c) => probs[s * C + c]);
      for (let c = 0; c < C; c++) sum[c] += p[c];
      const pred = keyLabel[argmax(p)];
      stepPreds.push(pred);
      this.step.add(row.label, pred);
      group.steps++;
      if (pred === row.label) group.correct++;
      if (serviceLabels && serviceLabels[s] !== undefined) {
        this.serviceLabels.set(serviceLabels[s], (this.serviceLabels.get(serviceLabels[s]) ?? 0) + 1);
      }
      if (this.task === 'speech') {
        const truth = row.label === 'speech';
        const ours = pred === 'speech';
        this.oursBinary.add(truth, ours);
        group.ours.add(truth, ours);
        if (file.silero && s < file.silero.length) {
          this.sileroSeen = true;
          this.sileroBinary.add(truth, file.silero[s] === 1);
          group.silero.add(truth, file.silero[s] === 1);
          this.oursOnSilero.add(truth, ours);
        }
      }
    }
    if (stepPreds.length === 0) {
      this.rowsWithoutVoicedSteps++;
      return;
    }
    this.uttMean.add(row.label, keyLabel[argmax(sum)]);
    this.uttMajority.add(row.label, majority(stepPreds, keyLabel) as string);
  }

  report(): TaskReport {
    const pc = this.step.perClass();
    const out: TaskReport = {
      task: this.task,
      labels: [...this.labels],
      rows: this.rows,
      rowsWithoutVoicedSteps: this.rowsWithoutVoicedSteps,
      silentSteps: this.silentSteps,
      step: {
        n: this.step.total,
        accuracy: this.step.accuracy(),
        uar: this.step.uar(),
        macroF1: this.step.macroF1(),
        perClass: pc.map(({ label, support, precision, recall, f1 }) => ({ label, support, precision, recall, f1 })),
        confusion: this.step.toJSON(),
      },
      byGroup: [...this.groups.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([group, g]) => ({
          group,
          rows: g.rows,
          steps: g.steps,
          stepAccuracy: g.steps > 0 ? g.correct / g.steps : NaN,
          ...(this.task === 'speech' ? { speechRate: rate(g.ours), speechF1: g.ours.scores().f1 } : {}),
          ...(this.task === 'speech' && g.silero.total > 0 ? { sileroSpeechRate: rate(g.silero), sileroSpeechF1: g.silero.scores().f1 } : {}),
        })),
      utterance: {
        n: this.uttMean.total,
        mean: { accuracy: this.uttMean.accuracy(), uar: this.uttMean.uar(), confusion: this.uttMean.toJSON() },
        majority: { accuracy: this.uttMajority.accuracy(), uar: this.uttMajority.uar(), confusion: this.uttMajority.toJSON() },
      },
    };
    if (this.serviceLabels.size > 0) out.serviceLabels = Object.fromEntries([...this.serviceLabels].sort());
    if (this.task === 'speech') {
      out.speechVsNonSpeech = { steps: this.oursBinary.total, ours: this.oursBinary.toJSON() };
      if (this.sileroSeen) {
        out.speechVsNonSpeech.silero = { steps: this.sileroBinary.total, ...this.sileroBinary.toJSON() };
        out.speechVsNonSpeech.oursOnSileroSteps = this.oursOnSilero.toJSON();
      }
    }
    return out;
  }
}
