/**
 * Fair scheduling between projects (docs/reliability.md, "Fair queueing"), part of
 * `npm run bench:load` (also alone: `node dist/bench/load/fair.js [--long N] [--long-minutes M]`).
 * One real `auris serve` with CONCURRENCY=1 and real models; project A queues N long URL jobs
 * (a local file host serves an M-minute WAV), then project B creates one 4 s upload job. The
 * bench reports how long B waited (creation to succeeded) next to A's mean job time, i.e. what a
 * first-in first-out queue would have made B wait (N x A's job time), and how many of 250 jobs
 * key A may hold unfinished (MAX_ACTIVE_JOBS_PER_KEY).
 */
import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..');
const KEY_A = 'fair-key-project-a-01';
const KEY_B = 'fair-key-project-b-02';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface FairnessResult {
  longJobs: number;
  longAudioMinutes: number;
  longJobMeanSec: number;
  smallJobWaitSec: number;
  fifoWaitEstimateSec: number;
  smallJobRanAfterLongJobs: number;
  activeJobsAccepted: number;
  activeJobsRefused429: number;
}

function argOf(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? Number(process.argv[i + 1]) : def;
}

async function waitDone(url: string, key: string, id: string): Promise<{ status: string; started_at: string; finished_at: string }> {
  for (;;) {
    const j = (await (await fetch(`${url}/file-processing/jobs/${id}`, { headers: { 'x-api-key': key } })).json()) as { status: string; started_at: string; finished_at: string };
    if (j.status === 'succeeded' || j.status === 'failed') return j;
    await sleep(100);
  }
}

/** Runs the scenario on a fresh server; `longJobs` jobs of `longMinutes` minutes of audio for project A. */
export async function runFairness(longJobs = 15, longMinutes = 20): Promise<FairnessResult> {
  const dir = mkdtempSync(join(tmpdir(), 'auris-fair-'));
  const long = join(dir, 'long.wav');
  const small = join(dir, 'small.wav');
  execFileSync('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', long, 'synth', String(longMinutes * 60), 'pinknoise', 'vol', '0.2']);
  execFileSync('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', small, 'synth', '4', 'sine', '300']);
  const longBytes = readFileSync(long);
  const files = createServer((_req, res) => res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': longBytes.length }).end(longBytes));
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  const fileUrl = `http://127.0.0.1:${(files.address() as { port: number }).port}/long.wav`;
  const child = spawn(process.execPath, [join(ROOT, 'dist/src/cli/main.js'), 'serve', '--host', '127.0.0.1', '--port', '0', '--grpc-port', '0', '--data-dir', join(dir, 'data'), '--concurrency', '1'], {
    env: { ...process.env, API_KEYS: `${KEY_A}:org-a:proj-a,${KEY_B}:org-b:proj-b`, URL_ALLOWLIST: '127.0.0.1', LOG_LEVEL: 'info', RATE_LIMIT_BURST: '1000' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out = (out + d).slice(-200_000)));
  try {
    let url = '';
    for (let i = 0; i < 600 && !url; i++) {
      url = /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1] ?? '';
      await sleep(200);
    }
    if (!url) throw new Error('server did not start');
    const q = 'models=speech,arousal,gender&output_period=1024';
    const longIds: string[] = [];
    for (let i = 0; i < longJobs; i++) {
      const res = await fetch(`${url}/file-processing/jobs?${q}`, { method: 'POST', headers: { 'x-api-key': KEY_A, 'content-type': 'application/json' }, body: JSON.stringify({ url: fileUrl }) });
      longIds.push(((await res.json()) as { job_id: string }).job_id);
    }
    await sleep(200);
    const created = Date.now();
    const smallRes = await fetch(`${url}/file-processing/jobs?${q}`, { method: 'POST', headers: { 'x-api-key': KEY_B, 'content-type': 'audio/wav' }, body: readFileSync(small) });
    const smallId = ((await smallRes.json()) as { job_id: string }).job_id;
    const smallJob = await waitDone(url, KEY_B, smallId);
    const smallWaitSec = (Date.now() - created) / 1000;
    const longDone = await Promise.all(longIds.map((id) => waitDone(url, KEY_A, id)));
    const durations = longDone.map((j) => (Date.parse(j.finished_at) - Date.parse(j.started_at)) / 1000);
    const mean = durations.reduce((a, b) => a + b, 0) / durations.length;
    const ranAfter = longDone.filter((j) => j.started_at < smallJob.started_at).length;
    // The per-key limit of unfinished jobs: key A tries to hold 250 (the long file, so they stay queued).
    let accepted = 0;
    let refused = 0;
    for (let i = 0; i < 250; i++) {
      const res = await fetch(`${url}/file-processing/jobs?${q}`, { method: 'POST', headers: { 'x-api-key': KEY_A, 'content-type': 'application/json' }, body: JSON.stringify({ url: fileUrl }) });
      await res.arrayBuffer();
      if (res.status === 201) accepted++;
      else if (res.status === 429) refused++;
    }
    return {
      longJobs,
      longAudioMinutes: longMinutes,
      longJobMeanSec: +mean.toFixed(2),
      smallJobWaitSec: +smallWaitSec.toFixed(2),
      fifoWaitEstimateSec: +(mean * longJobs).toFixed(1),
      smallJobRanAfterLongJobs: ranAfter,
      activeJobsAccepted: accepted,
      activeJobsRefused429: refused,
    };
  } finally {
    child.kill('SIGKILL');
    files.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  runFairness(argOf('long', 15), argOf('long-minutes', 20)).then(
    (r) => console.log(JSON.stringify(r, null, 2)),
    (e) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
