/**
 * `auris jobs`: the REST service from the command line, through the package's typed client
 * (src/client): submit a file or URL and wait for the results, list, get, results, delete.
 */
import { checkSpeakerCounts, parseSpeakerCount, SPEAKER_COUNT_LIMIT } from '../analysis/options';
import { AurisApiError, AurisClient, type JobParams } from '../client';
import { AurisError } from '../errors';
import { DEFAULT_URL, parseCommand, type Parsed, ProgressBar, renamedOption, restUrl, speechFirst } from './util';

export const summary = 'submit files or URLs to a running service and fetch results (REST client)';

const HELP = `usage: auris jobs submit <file|url> [options]     create a job, wait, print the results JSON
       auris jobs list [--status S] [--limit N]      the project's jobs, newest first (one JSON line each)
       auris jobs get|results|delete <job_id>

options:
  --url <http://host:port>  the service's REST base URL (default $AURIS_URL or ${DEFAULT_URL})
  --api-key <key>           API key (default $AURIS_API_KEY)
  --models <a,b>            submit: models (default: every model the server has): speech, arousal, gender,
                            emotions, speakers (who speaks when: speaker_1, speaker_2, ...)
  --output-period <ms>      submit: output period, a multiple of 64 (default 1024)
  --summary, --transitions, --raw   submit: include summary / transitions / raw values
  --num-speakers <n>        submit: speakers model, the number of speakers per channel when known, 1..${SPEAKER_COUNT_LIMIT}
  --max-speakers <n>        submit: speakers model, at most this many speakers per channel, 1..${SPEAKER_COUNT_LIMIT}
  --metadata <k=v>          submit: metadata entry (repeatable)
  --idempotency-key <key>   submit: Idempotency-Key (default: a random one, so a retry cannot create two jobs)
  --no-wait                 submit: print the created job record and exit
  --status <s>, --limit <n> list: filters

exit status: 0 ok, 1 the service answered an error or the job failed (code on stderr), 2 usage error.`;

const VALUE_OPTIONS = ['--url', '--api-key', '--models', '--output-period', '--num-speakers', '--max-speakers', '--metadata', '--idempotency-key', '--status', '--limit'];

const OPTIONS = {
  url: { type: 'string' },
  'api-key': { type: 'string' },
  models: { type: 'string' },
  'output-period': { type: 'string', default: '1024' },
  summary: { type: 'boolean', default: false },
  transitions: { type: 'boolean', default: false },
  raw: { type: 'boolean', default: false },
  'num-speakers': { type: 'string' },
  'max-speakers': { type: 'string' },
  metadata: { type: 'string', multiple: true },
  'idempotency-key': { type: 'string' },
  'no-wait': { type: 'boolean', default: false },
  status: { type: 'string' },
  limit: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;
type Values = Parsed<typeof OPTIONS>['values'];

const print = (v: unknown): void => void process.stdout.write(JSON.stringify(v) + '\n');

export async function run(argv: string[]): Promise<number> {
  const renamed = renamedOption(argv, { '--server': '--url <http://host:port>' });
  if (renamed) {
    process.stderr.write(`auris jobs: ${renamed}\n`);
    return 2;
  }
  const parsed = parseCommand('jobs', argv, OPTIONS, HELP, VALUE_OPTIONS);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const [action, target] = positionals;
  const apiKey = values['api-key'] ?? process.env.AURIS_API_KEY;
  if (!apiKey || !action || (action !== 'list' && !target)) {
    process.stderr.write(`auris jobs: ${!apiKey ? 'missing --api-key (or $AURIS_API_KEY)' : 'missing arguments'}\n\n${HELP}\n`);
    return 2;
  }
  const client = new AurisClient({ baseUrl: restUrl(values.url), apiKey });
  try {
    switch (action) {
      case 'submit':
        return await submit(client, target!, values);
      case 'list':
        for await (const job of client.allJobs({ status: values.status as never, limit: values.limit ? Number(values.limit) : undefined })) print(job);
        return 0;
      case 'get':
        return print(await client.getJob(target!)), 0;
      case 'results':
        return print(await client.getResults(target!)), 0;
      case 'delete':
        await client.deleteJob(target!);
        return 0;
      default:
        process.stderr.write(`auris jobs: unknown action ${action}\n\n${HELP}\n`);
        return 2;
    }
  } catch (err) {
    if (err instanceof AurisApiError) {
      process.stderr.write(`auris jobs: error [${err.code}]: ${err.problem.detail}\n`);
      return 1;
    }
    if (err instanceof AurisError) {
      process.stderr.write(`auris jobs: error [${err.code}]: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

/** `jobs submit`: creates the job, waits for it (unless --no-wait) and prints its results. */
async function submit(client: AurisClient, target: string, values: Values): Promise<number> {
  // The speaker counts are checked here by the server's rules (before anything is sent).
  const numSpeakers = parseSpeakerCount('num_speakers', values['num-speakers']);
  const maxSpeakers = parseSpeakerCount('max_speakers', values['max-speakers']);
  const models = values.models !== undefined ? values.models.split(',') : await serverModels(client);
  checkSpeakerCounts(models, numSpeakers, maxSpeakers);
  const params: JobParams = {
    models,
    output_period: Number(values['output-period']),
    include_summary: values.summary,
    include_transitions: values.transitions,
    include_raw_values: values.raw,
    ...(numSpeakers !== undefined ? { num_speakers: numSpeakers } : {}),
    ...(maxSpeakers !== undefined ? { max_speakers: maxSpeakers } : {}),
  };
  const metadata = values.metadata ? Object.fromEntries(values.metadata.map((e) => [e.split('=')[0]!, e.split('=').slice(1).join('=')])) : undefined;
  const input = /^https?:\/\//i.test(target) ? { url: target } : { file: target };
  const job = await client.createJob(input, params, { metadata, idempotencyKey: values['idempotency-key'] ?? true });
  if (values['no-wait']) return print(job), 0;
  const bar = new ProgressBar(job.job_id.slice(0, 8));
  const done = await client.waitForJob(job.job_id, { onProgress: (j) => bar.update(j.progress), intervalMs: 250 });
  bar.done();
  for (const w of done.warnings ?? []) process.stderr.write(`auris jobs: warning [${w.code}]: ${w.message}\n`);
  if (done.status === 'failed') {
    process.stderr.write(`auris jobs: job ${done.job_id} failed [${done.error?.code}]: ${done.error?.message}\n`);
    return 1;
  }
  print(await client.getResults(done.job_id));
  return 0;
}

/** Every model the server has, speech first (GET /models): the default of every client command. */
async function serverModels(client: AurisClient): Promise<string[]> {
  return speechFirst((await client.listModels()).models.map((m) => m.name));
}
