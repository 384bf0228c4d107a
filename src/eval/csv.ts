/**
 * The evaluation list format of `auris eval` (docs/eval.md):
 *
 *   path,task,label[,start_ms,end_ms]
 *
 * - `path`: audio file, relative to the root folder (default: the CSV's folder) or absolute;
 * - `task`: speech | gender | arousal | emotions;
 * - `label`: one of that task's labels (speech: speech, music, other; gender: female, male;
 *   arousal: high, low, neutral; emotions: happy, irritated, neutral, tired);
 * - `start_ms`, `end_ms` (optional, either may be empty): score only the steps whose
 *   middle lies in [start_ms, end_ms).
 *
 * A header line is optional; when the first line has a field `path` it names the columns,
 * which may then come in any order (further columns are ignored). Without a header the
 * columns are positional. Empty lines and lines starting with `#` are skipped. Fields may be
 * double-quoted (RFC 4180). Every bad row is reported with its line number.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export type EvalTask = 'speech' | 'gender' | 'arousal' | 'emotions';
export const EVAL_TASKS: readonly EvalTask[] = ['speech', 'gender', 'arousal', 'emotions'];

/** Labels per task: the raw class keys of each model (docs/features.md). */
export const DEFAULT_TASK_LABELS: Readonly<Record<EvalTask, readonly string[]>> = {
  speech: ['music', 'other', 'speech'],
  gender: ['female', 'male'],
  arousal: ['high', 'low', 'neutral'],
  emotions: ['happy', 'irritated', 'neutral', 'tired'],
};

export interface EvalRow {
  /** 1-based line number in the CSV. */
  line: number;
  /** The path as written in the CSV. */
  rawPath: string;
  /** Absolute path of the audio file. */
  path: string;
  task: EvalTask;
  label: string;
  startMs?: number;
  endMs?: number;
}

export class EvalCsvError extends Error {
  readonly code = 'EVAL_CSV_INVALID';
  constructor(readonly source: string, readonly problems: string[]) {
    const shown = problems.slice(0, 20);
    const more = problems.length > shown.length ? `\n  ... and ${problems.length - shown.length} more` : '';
    super(`${source}: ${problems.length} bad row${problems.length === 1 ? '' : 's'}:\n  ${shown.join('\n  ')}${more}`);
    this.name = 'EvalCsvError';
  }
}

/** Splits CSV text into records of fields (RFC 4180 quoting), with the line each starts on. */
export function splitCsv(text: string): { line: number; fields: string[] }[] {
  const records: { line: number; fields: string[] }[] = [];
  let fields: string[] = [];
  let field = '';
  let inQuotes = false;
  let quotedField = false;
  let line = 1;
  let recordLine = 1;
  const src = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const endRecord = () => {
    fields.push(field);
    records.push({ line: recordLine, fields });
    fields = [];
    field = '';
    quotedField = false;
  };
  for (let i = 0; i < src.length; i++) {
    const ch = src[i];
    if (inQuotes) {
      if (ch === '"') {
        if (src[i + 1] === '"') {
          field += '"';
          i++;
        } else {
          inQuotes = false;
        }
      } else {
        if (ch === '\n') line++;
        field += ch;
      }
      continue;
    }
    if (ch === '"' && field.length === 0 && !quotedField) {
      inQuotes = true;
      quotedField = true;
    } else if (ch === ',') {
      fields.push(field);
      field = '';
      quotedField = false;
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && src[i + 1] === '\n') i++;
      endRecord();
      line++;
      recordLine = line;
    } else {
      field += ch;
    }
  }
  if (inQuotes) throw new Error(`unterminated quoted field starting on line ${recordLine}`);
  if (field.length > 0 || fields.length > 0 || quotedField) endRecord();
  return records;
}

export interface ParseOptions {
  /** Folder that relative paths are resolved against. */
  root: string;
  /** Name used in error messages (usually the CSV's path). */
  source?: string;
  /** Labels per task (default: DEFAULT_TASK_LABELS, or the models' raw_keys). */
  labels?: Partial<Record<EvalTask, readonly string[]>>;
}

const COLUMNS = ['path', 'task', 'label', 'start_ms', 'end_ms'] as const;
type Column = (typeof COLUMNS)[number];

/** Parses an evaluation list. Throws EvalCsvError listing every bad row. */
export function parseEvalCsv(text: string, opts: ParseOptions): EvalRow[] {
  const source = opts.source ?? 'eval CSV';
  const labels: Record<EvalTask, readonly string[]> = { ...DEFAULT_TASK_LABELS, ...(opts.labels ?? {}) };
  let records: { line: number; fields: string[] }[];
  try {
    records = splitCsv(text);
  } catch (err) {
    throw new EvalCsvError(source, [(err as Error).message]);
  }
  records = records.filter((r) => !(r.fields.length === 1 && r.fields[0].trim() === '') && !r.fields[0].trimStart().startsWith('#'));

  const problems: string[] = [];
  let colIndex: Record<Column, number> = { path: 0, task: 1, label: 2, start_ms: 3, end_ms: 4 };
  let hasHeader = false;
  if (records.length > 0 && records[0].fields.some((f) => f.trim().toLowerCase() === 'path')) {
    hasHeader = true;
    const header = records[0].fields.map((f) => f.trim().toLowerCase());
    const idx = {} as Record<Column, number>;
    for (const c of COLUMNS) idx[c] = header.indexOf(c);
    for (const c of ['path', 'task', 'label'] as const) {
      if (idx[c] < 0) problems.push(`line ${records[0].line}: header has no "${c}" column (columns: ${COLUMNS.join(', ')})`);
    }
    if (problems.length > 0) throw new EvalCsvError(source, problems);
    colIndex = idx;
    records = records.slice(1);
  }

  const rows: EvalRow[] = [];
  for (const { line, fields } of records) {
    const where = `line ${line}`;
    if (!hasHeader && (fields.length < 3 || fields.length > 5)) {
      problems.push(`${where}: expected 3 to 5 columns (path,task,label[,start_ms,end_ms]), got ${fields.length}`);
      continue;
    }
    if (hasHeader && fields.length < Math.max(colIndex.path, colIndex.task, colIndex.label) + 1) {
      problems.push(`${where}: expected at least ${Math.max(colIndex.path, colIndex.task, colIndex.label) + 1} columns, got ${fields.length}`);
      continue;
    }
    const get = (c: Column): string => (colIndex[c] >= 0 && colIndex[c] < fields.length ? fields[colIndex[c]].trim() : '');
    const rawPath = get('path');
    const task = get('task');
    const label = get('label');
    const before = problems.length;
    if (rawPath === '') problems.push(`${where}: empty path`);
    if (!(EVAL_TASKS as readonly string[]).includes(task)) {
      problems.push(`${where}: unknown task "${task}" (expected one of: ${EVAL_TASKS.join(', ')})`);
    } else if (!labels[task as EvalTask].includes(label)) {
      problems.push(`${where}: label "${label}" is not a ${task} label (expected one of: ${labels[task as EvalTask].join(', ')})`);
    }
    const startMs = parseMs(get('start_ms'), 'start_ms', where, problems);
    const endMs = parseMs(get('end_ms'), 'end_ms', where, problems);
    if (startMs !== undefined && endMs !== undefined && !(endMs > startMs)) {
      problems.push(`${where}: end_ms (${endMs}) must be greater than start_ms (${startMs})`);
    }
    if (problems.length > before) continue;
    rows.push({
      line,
      rawPath,
      path: path.resolve(opts.root, rawPath),
      task: task as EvalTask,
      label,
      ...(startMs !== undefined ? { startMs } : {}),
      ...(endMs !== undefined ? { endMs } : {}),
    });
  }
  if (problems.length > 0) throw new EvalCsvError(source, problems);
  if (rows.length === 0) throw new EvalCsvError(source, ['no rows to evaluate']);
  return rows;
}

function parseMs(value: string, name: string, where: string, problems: string[]): number | undefined {
  if (value === '') return undefined;
  if (!/^\d+(\.\d+)?$/.test(value)) {
    problems.push(`${where}: ${name} "${value}" is not a non-negative number of milliseconds`);
    return undefined;
  }
  return Number(value);
}

/** Reads and parses an evaluation list; `root` defaults to the CSV's folder. */
export function readEvalCsv(csvPath: string, opts: { root?: string; labels?: ParseOptions['labels'] } = {}): EvalRow[] {
  const text = fs.readFileSync(csvPath, 'utf8');
  return parseEvalCsv(text, { root: opts.root ?? path.dirname(path.resolve(csvPath)), source: csvPath, labels: opts.labels });
}
