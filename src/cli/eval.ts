/**
 * `auris eval --csv list.csv [--csv more.csv] [--root dir] [--models speech,gender,arousal]
 *             [--json out.json] [--no-silero] [--concurrency n] [--volume-threshold dB]`
 *
 * Scores the models on labelled audio (format: docs/eval.md) through the real pipeline and
 * prints step-level accuracy, UAR, per-class F1 and confusion matrices, utterance-level
 * accuracy, and for the speech task our speech-vs-non-speech F1 beside Silero VAD's.
 */
import * as fs from 'node:fs';
import { parseArgs } from 'node:util';
import { EVAL_TASKS, EvalTask } from '../eval/csv';
import { formatTaskReport } from '../eval/report';
import { runEval, EvalOptions, EvalReport } from '../eval/run';
import { pct } from '../eval/metrics';
import { joinNegativeValues } from './util';

export const summary = 'evaluate the models on a labelled data set';

const HELP = `usage: auris eval --csv list.csv [--csv more.csv ...] [options]
       auris eval --conversations DIR [--oracle-count] [--json out.json]

Runs every file of the list(s) through the pipeline (output period 64 ms, channel 0) and
prints per task: step-level accuracy, UAR, per-class F1, confusion matrix; utterance-level
accuracy (gender, arousal); for speech, speech-vs-non-speech F1 of ours and of Silero VAD.
CSV columns: path,task,label[,start_ms,end_ms]  (see docs/eval.md)

options:
  --csv FILE              evaluation list (repeatable)
  --root DIR              folder relative paths start from (default: each CSV's folder)
  --models LIST           tasks to score, comma-separated: speech,gender,arousal (default: all in the CSV)
  --json FILE             also write the full report as JSON
  --no-silero             do not run the Silero VAD reference
  --concurrency N         files analysed at once (default 2)
  --volume-threshold DB   silence gate in dBFS (default: the service's)
  --models-dir DIR        models directory (default: the service's)
  --conversations DIR     score the speakers model instead: every DIR/<name>.wav with its
                          <name>.json turns (training/diarization exports them), as a file
                          job and as a live stream: diarization error rate (0.25 s collar)
                          and whether the number of speakers is right, per condition
  --oracle-count          with --conversations: give each file its true num_speakers
  -h, --help              this help
`;

function parseTasks(v: string): EvalTask[] {
  const list = v.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const bad = list.filter((t) => !(EVAL_TASKS as readonly string[]).includes(t));
  if (bad.length > 0 || list.length === 0) throw new Error(`--models: unknown task(s) ${bad.join(', ') || '(none)'}; expected ${EVAL_TASKS.join(', ')}`);
  return list as EvalTask[];
}

export function formatReport(r: EvalReport): string {
  const out: string[] = [];
  out.push(`auris eval: ${r.rows} rows, ${r.files} files, ${(r.audioSec / 60).toFixed(1)} min of audio in ${r.elapsedSec.toFixed(0)} s (${r.csv.join(', ')})`);
  out.push(`models: ${r.models.map((m) => `${m.name}${m.version ? ` ${m.version}` : ''}${m.sha256 ? ` (onnx sha256 ${m.sha256})` : ''}`).join(', ')}`);
  out.push(`Silero VAD reference: ${r.silero.used ? r.silero.model : `not used: ${r.silero.note ?? 'no speech rows'}`}`);
  if (r.failures.length > 0) {
    out.push(`${r.failures.length} file(s) failed and were left out:`);
    for (const f of r.failures.slice(0, 10)) out.push(`  ${f.path}: ${f.error}`);
    if (r.failures.length > 10) out.push('  ...');
  }
  for (const t of r.tasks) {
    out.push('');
    out.push(formatTaskReport(t));
  }
  out.push('');
  out.push('summary: ' + r.tasks.map((t) => `${t.task} step UAR ${pct(t.step.uar)}${t.task !== 'speech' ? `, utterance acc ${pct(t.utterance.mean.accuracy)}` : ''}${t.speechVsNonSpeech ? `, speech F1 ${pct(t.speechVsNonSpeech.ours.f1)}${t.speechVsNonSpeech.silero ? ` (Silero ${pct(t.speechVsNonSpeech.silero.f1)})` : ''}` : ''}`).join('; '));
  return out.join('\n');
}

/** `--conversations DIR`: the speaker map's diarization error rate (src/eval/speakers.ts). */
async function evalConversations(dir: string, oracleCount: boolean, json: string | undefined, modelsDir: string | undefined): Promise<number> {
  const { readConversations, scoreConversation, groupScores, formatGroups } = await import('../eval/speakers');
  const list = readConversations(dir);
  if (list.length === 0) throw new Error(`--conversations: no <name>.wav + <name>.json pairs in ${dir}`);
  const scores = [];
  const t0 = Date.now();
  for (const c of list) {
    const s = await scoreConversation(c, oracleCount ? { numSpeakers: c.speakers } : {}, modelsDir);
    scores.push(s);
    process.stderr.write(`[eval] ${c.name}: ${c.speakers} speakers, file DER ${(100 * s.file.der).toFixed(1)} % (${s.file.hypSpeakers} found), stream ${(100 * s.stream.der).toFixed(1)} % (${s.stream.hypSpeakers})\n`);
  }
  const size = (n: number): string => (n <= 4 ? '2-4 speakers' : '5+ speakers');
  const out = [
    `auris eval --conversations: ${scores.length} conversations, ${(scores.reduce((a, s) => a + s.durationS, 0) / 60).toFixed(1)} min in ${((Date.now() - t0) / 1000).toFixed(0)} s${oracleCount ? ' (num_speakers given)' : ''}`,
    formatGroups('by condition and size', groupScores(scores, (s) => `${s.condition} ${size(s.speakers)}`)),
    formatGroups('by corpus', groupScores(scores, (s) => s.corpus)),
    formatGroups('all', groupScores(scores, () => 'all')),
  ].join('\n\n');
  process.stdout.write(out + '\n');
  if (json) fs.writeFileSync(json, JSON.stringify({ oracleCount, scores }, null, 2) + '\n');
  const inf = require('../inference') as { closeSharedEngines?: () => Promise<void> };
  await inf.closeSharedEngines?.();
  return 0;
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: joinNegativeValues(argv, ['--volume-threshold']),
    options: {
      csv: { type: 'string', multiple: true },
      root: { type: 'string' },
      models: { type: 'string' },
      json: { type: 'string' },
      'no-silero': { type: 'boolean' },
      concurrency: { type: 'string' },
      'volume-threshold': { type: 'string' },
      'models-dir': { type: 'string' },
      conversations: { type: 'string' },
      'oracle-count': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (values.conversations !== undefined) return evalConversations(values.conversations, values['oracle-count'] === true, values.json, values['models-dir']);
  if (!values.csv || values.csv.length === 0) {
    process.stderr.write(`auris eval: --csv is required\n\n${HELP}`);
    return 2;
  }
  const opts: EvalOptions = { csv: values.csv, log: (m) => process.stderr.write(`[eval] ${m}\n`) };
  if (values.root !== undefined) opts.root = values.root;
  if (values.models !== undefined) opts.tasks = parseTasks(values.models);
  if (values['no-silero']) opts.silero = 'off';
  if (values.concurrency !== undefined) {
    const n = Number(values.concurrency);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--concurrency must be a positive integer, got ${values.concurrency}`);
    opts.concurrency = n;
  }
  if (values['volume-threshold'] !== undefined) {
    const v = Number(values['volume-threshold']);
    if (!Number.isFinite(v)) throw new Error(`--volume-threshold must be a number (dBFS), got ${values['volume-threshold']}`);
    opts.volumeThreshold = v;
  }
  if (values['models-dir'] !== undefined) opts.modelsDir = values['models-dir'];
  const report = await runEval(opts);
  process.stdout.write(formatReport(report) + '\n');
  if (values.json) {
    fs.writeFileSync(values.json, JSON.stringify(report, null, 2) + '\n');
    process.stderr.write(`[eval] wrote ${values.json}\n`);
  }
  // Close the inference workers so the process can exit.
  try {
    const inf = require('../inference') as { closeSharedEngines?: () => Promise<void> };
    await inf.closeSharedEngines?.();
  } catch {
    /* pipeline never loaded */
  }
  return report.failures.length > 0 && report.tasks.length === 0 ? 1 : 0;
}

if (require.main === module) {
  run(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`auris eval: error: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
