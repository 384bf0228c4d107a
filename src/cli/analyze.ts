/**
 * `auris analyze <file> --models speech,arousal,gender [options]`: analyses one file and
 * prints the results envelope (JSON, docs/results.md) on stdout, or writes it to --out.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AurisError } from '../errors';
import { type AnalysisRequest, checkSpeakerCounts, DEFAULT_VOLUME_THRESHOLD_DB, parseAnalysisRequest, SPEAKER_COUNT_LIMIT } from '../analysis/options';
import { buildEnvelope } from '../analysis/postprocess';
import { InferenceEngine } from '../inference/engine';
import { analyzeFile } from '../pipeline/analyze-file';
import { SUPPORTED_FORMATS_TEXT } from '../audio/formats';
import type { AudioInfo } from '../audio/types';
import { TRUNCATED_AUDIO_WARNING } from '../jobs/worker';
import { audioSourceOf, formatError, parseCommand, type Parsed, ProgressBar, speechFirst } from './util';

export const summary = 'analyse an audio file, print the results JSON';

const HELP = `usage: auris analyze <file|-> [options]

Analyses one audio file (${SUPPORTED_FORMATS_TEXT}; '-' reads stdin) and prints the
results envelope JSON on stdout. Warnings (e.g. TRUNCATED_AUDIO: the file is shorter than its
header says) are printed on stderr; the exit status stays 0.

options:
  --models <list>           comma-separated model names (default: every installed model): speech, arousal,
                            gender, emotions, speakers (who speaks when: speaker_1, speaker_2, ...)
  --output-period <ms>      time-step length, a positive multiple of 64 (default 1024)
  --channel <n>             analyse only channel n (0-based; default: every channel)
  --summary                 add per-model summaries (include_summary)
  --transitions             add per-model transitions (include_transitions)
  --raw                     add raw class probabilities (include_raw_values)
  --volume-threshold <dB>   silence gate in dBFS, -120..0 (default ${DEFAULT_VOLUME_THRESHOLD_DB})
  --num-speakers <n>        speakers model: the number of speakers per channel when known, 1..${SPEAKER_COUNT_LIMIT} (num_speakers)
  --max-speakers <n>        speakers model: at most this many speakers per channel, 1..${SPEAKER_COUNT_LIMIT} (max_speakers)
  --out <file>              write the JSON there instead of stdout
  --pretty                  indent the JSON
  --job-id <id>             job_id of the envelope (default cli-<uuid>)
  --models-dir <dir>        models directory (default $AURIS_MODELS_DIR or <package>/models)
  --threads <n>             inference worker threads (default: CPU count)
  --max-duration <s>        reject longer files (seconds, all channels together)
  -h, --help                this help

exit status: 0 ok, 1 analysis error (message and code on stderr), 2 usage error.`;

const VALUE_OPTIONS = [
  '--models',
  '--output-period',
  '--channel',
  '--volume-threshold',
  '--num-speakers',
  '--max-speakers',
  '--out',
  '--job-id',
  '--models-dir',
  '--threads',
  '--max-duration',
];

function positiveInt(name: string, v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isInteger(n) || n < 1) {
    throw new AurisError('INVALID_ARGUMENT', `${name} must be a positive integer, got ${JSON.stringify(v)}`);
  }
  return n;
}

const OPTIONS = {
  models: { type: 'string' },
  'output-period': { type: 'string', default: '1024' },
  channel: { type: 'string' },
  summary: { type: 'boolean', default: false },
  transitions: { type: 'boolean', default: false },
  raw: { type: 'boolean', default: false },
  'volume-threshold': { type: 'string' },
  'num-speakers': { type: 'string' },
  'max-speakers': { type: 'string' },
  out: { type: 'string' },
  pretty: { type: 'boolean', default: false },
  'job-id': { type: 'string' },
  'models-dir': { type: 'string' },
  threads: { type: 'string' },
  'max-duration': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;
type Values = Parsed<typeof OPTIONS>['values'];

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand('analyze', argv, OPTIONS, HELP, VALUE_OPTIONS);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (positionals.length !== 1) {
    process.stderr.write(`auris analyze: ${positionals.length === 0 ? 'missing <file>' : `one file at a time, got ${positionals.length}`}\n\n${HELP}\n`);
    return 2;
  }

  let engine: InferenceEngine | undefined;
  const bar = new ProgressBar(`analyzing ${path.basename(positionals[0]!)}`);
  try {
    // Parameter errors first, before any model or file is opened; without --models, every
    // installed model (known once the engine has loaded them), as `stream` and `jobs submit` do.
    const counted = values['num-speakers'] !== undefined || values['max-speakers'] !== undefined;
    const { request: given, engineOptions, maxDurationSec } = parseOptions(values, values.models ?? (counted ? 'speakers' : 'speech'));
    const source = await audioSourceOf(positionals[0]!);
    engine = await InferenceEngine.create(engineOptions);
    const request = values.models === undefined ? { ...given, models: speechFirst(engine.models()) } : given;
    checkSpeakerCounts(request.models, request.numSpeakers, request.maxSpeakers); // every installed model: is speakers one?
    const result = await analyzeFile(source, request, {
      engine,
      onProgress: (f) => bar.update(f),
      ...(maxDurationSec !== undefined ? { maxDurationSec } : {}),
    });
    bar.done();
    for (const w of warningsOf(result.info)) process.stderr.write(`auris analyze: warning [${w.code}]: ${w.message}\n`);
    const envelope = buildEnvelope(values['job-id'] ?? `cli-${randomUUID()}`, result.channels);
    const json = JSON.stringify(envelope, null, values.pretty ? 2 : undefined) + '\n';
    if (values.out !== undefined) fs.writeFileSync(values.out, json);
    else process.stdout.write(json);
    return 0;
  } catch (e) {
    bar.done();
    process.stderr.write(formatError(e) + '\n');
    return 1;
  } finally {
    await engine?.close();
  }
}

/** What a job would record as its warnings (src/jobs/worker.ts), from the audio's facts. */
function warningsOf(info: AudioInfo): Array<{ code: string; message: string }> {
  return info.truncated ? [TRUNCATED_AUDIO_WARNING] : [];
}

/** The analysis request, the engine's options and the duration limit (AurisError INVALID_ARGUMENT on a bad value). */
function parseOptions(values: Values, models: string): { request: AnalysisRequest; engineOptions: { modelsDir?: string; size?: number }; maxDurationSec?: number } {
  const request = parseAnalysisRequest({
    models,
    outputPeriodMs: values['output-period']!,
    channel: values.channel,
    includeSummary: values.summary === true,
    includeTransitions: values.transitions === true,
    includeRaw: values.raw === true,
    volumeThreshold: values['volume-threshold'],
    numSpeakers: values['num-speakers'],
    maxSpeakers: values['max-speakers'],
  });
  const threads = values.threads !== undefined ? positiveInt('--threads', values.threads) : undefined;
  const maxDurationSec = values['max-duration'] !== undefined ? Number(values['max-duration']) : undefined;
  if (maxDurationSec !== undefined && !(maxDurationSec > 0)) {
    throw new AurisError('INVALID_ARGUMENT', `--max-duration must be a positive number of seconds`);
  }
  const engineOptions: { modelsDir?: string; size?: number } = {};
  if (values['models-dir'] !== undefined) engineOptions.modelsDir = path.resolve(values['models-dir']);
  if (threads !== undefined) engineOptions.size = threads;
  return { request, engineOptions, ...(maxDurationSec !== undefined ? { maxDurationSec } : {}) };
}
