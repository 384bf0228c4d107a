/**
 * Distributed-mode throughput: one `auris serve --role api` node and 1, 2, 4 worker
 * processes (`--role worker --concurrency 1`, one inference thread each) on a local
 * nats-server -js. For each worker count: a fresh NATS store, a warm-up job per worker
 * (models load), then N direct-upload jobs submitted at once (a 290 s FLAC: the shipped
 * test/fixtures/demo.flac repeated 12 times with sox; speech + arousal + gender,
 * output_period 1024, with a callback), timed from the first request to the last callback. Reports jobs/s and audio x-real-time (audio seconds analysed
 * per wall second), and writes bench/out/nats.json. Numbers only, never pass/fail.
 *
 *   npm run bench:nats                      (node dist/bench/nats/run.js [--jobs 20] [--workers 1,2,4] [--repeat 12])
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { startReceiver, tempDir } from '../../test/http/helpers';
import { type NodeProc, startNode } from '../../test/nats/procs';
import { natsUnavailable, TestNatsServer } from '../../test/nats/server';

const ROOT = resolve(__dirname, '..', '..', '..');
const DEMO = join(ROOT, 'test', 'fixtures', 'demo.flac');
const OUT = join(ROOT, 'bench', 'out');
const KEY = 'bench-nats-key-0001';
const QUERY = 'models=speech,arousal,gender&output_period=1024&include_summary=true';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : def;
}

const log = (msg: string): void => void process.stderr.write(`[bench:nats] ${msg}\n`);

interface Row {
  workers: number;
  jobs: number;
  wallSec: number;
  jobsPerSec: number;
  audioSec: number;
  xRealTime: number;
  /** Mean of finished_at - started_at over the measured jobs, s. */
  meanJobSec: number;
  failed: number;
  /** CPU seconds used during the measured window by the worker processes (all together) and by the API node. */
  workerCpuSec: number;
  apiCpuSec: number;
  loadAvg1: number;
}

/** utime + stime of a process, seconds (Linux /proc). */
function cpuSec(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // clock ticks (USER_HZ 100)
  } catch {
    return 0;
  }
}

interface JobRecord {
  job_id: string;
  status: string;
  started_at: string | null;
  finished_at: string | null;
}

/** The job audio: demo.flac repeated `repeat` times (bench/out/, reused). */
function input(repeat: number): { path: string; seconds: number } {
  mkdirSync(OUT, { recursive: true });
  const path = join(OUT, `nats-demo-x${repeat}.flac`);
  if (!existsSync(path)) execFileSync('sox', [DEMO, path, 'repeat', String(repeat - 1)], { stdio: 'pipe' });
  return { path, seconds: Number(execFileSync('soxi', ['-D', path], { encoding: 'utf8' }).trim()) };
}

async function measure(workers: number, jobs: number, audio: { path: string; seconds: number }): Promise<Row> {
  const nats = await TestNatsServer.start();
  const dir = tempDir('auris-bench-nats-');
  const done = new Set<string>();
  let lastAt = 0;
  const receiver = await startReceiver((r) => {
    done.add(String(r.headers['x-auris-job-id']));
    lastAt = Date.now();
    return 200;
  });
  const nodes: NodeProc[] = [];
  try {
    const args = (sub: string): string[] => [
      '--nats',
      nats.url,
      '--data-dir',
      join(dir.path, sub),
      '--api-keys',
      `${KEY}:org:proj`,
      '--concurrency',
      '1',
      '--grpc-port',
      '0',
      '--url-allowlist',
      '127.0.0.1',
      '--rate-limit-rps',
      '100000',
      '--rate-limit-burst',
      '100000',
      '--log-level',
      'warn',
    ];
    const env = { AURIS_INFERENCE_THREADS: '1' };
    nodes.push(await startNode({ role: 'api', args: args('api'), real: true, env }));
    for (let i = 0; i < workers; i++) nodes.push(await startNode({ role: 'worker', args: args(`w${i}`), real: true, env }));
    const api = nodes[0]!;
    const body = readFileSync(audio.path);
    const submit = async (): Promise<string> => {
      const res = await fetch(`${api.url}/file-processing/jobs?${QUERY}&callback=${encodeURIComponent(receiver.url)}`, {
        method: 'POST',
        headers: { 'x-api-key': KEY, 'content-type': 'audio/flac' },
        body,
      });
      const text = await res.text();
      if (res.status !== 201) throw new Error(`create: ${res.status} ${text}`);
      return (JSON.parse(text) as JobRecord).job_id;
    };
    const waitAll = async (ids: string[]): Promise<void> => {
      const deadline = Date.now() + 600_000;
      while (!ids.every((id) => done.has(id))) {
        if (Date.now() > deadline) throw new Error(`timed out: ${ids.filter((id) => !done.has(id)).length} jobs missing`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };

    // Warm-up: one job per worker (each loads its models), not measured.
    await waitAll(await Promise.all(Array.from({ length: workers }, submit)));

    const cpu0 = nodes.map((n) => cpuSec(n.pid));
    const t0 = Date.now();
    const ids = await Promise.all(Array.from({ length: jobs }, submit));
    await waitAll(ids);
    const cpu = nodes.map((n, i) => cpuSec(n.pid) - cpu0[i]!);
    const wallSec = (lastAt - t0) / 1000;
    const records = await Promise.all(
      ids.map(async (id) => (await (await fetch(`${api.url}/file-processing/jobs/${id}`, { headers: { 'x-api-key': KEY } })).json()) as JobRecord),
    );
    const ok = records.filter((r) => r.status === 'succeeded');
    const meanJobSec = ok.reduce((s, r) => s + (Date.parse(r.finished_at!) - Date.parse(r.started_at!)) / 1000, 0) / Math.max(1, ok.length);
    return {
      workers,
      jobs,
      wallSec: round(wallSec, 2),
      jobsPerSec: round(jobs / wallSec, 2),
      audioSec: round(jobs * audio.seconds, 1),
      xRealTime: round((jobs * audio.seconds) / wallSec, 1),
      meanJobSec: round(meanJobSec, 2),
      failed: records.length - ok.length,
      workerCpuSec: round(cpu.slice(1).reduce((a, b) => a + b, 0), 2),
      apiCpuSec: round(cpu[0]!, 2),
      loadAvg1: round(loadavg()[0]!, 2),
    };
  } finally {
    for (const n of nodes) await n.stop();
    await receiver.close();
    await nats.close();
    dir.cleanup();
  }
}

const round = (v: number, d: number): number => Math.round(v * 10 ** d) / 10 ** d;

async function main(): Promise<void> {
  const why = natsUnavailable();
  if (why) {
    log(`skipped: ${why}`);
    return;
  }
  const jobs = Number(arg('jobs', '20'));
  const counts = arg('workers', '1,2,4').split(',').map(Number);
  const audio = input(Number(arg('repeat', '12')));
  const rows: Row[] = [];
  for (const w of counts) {
    log(`${w} worker process(es), ${jobs} jobs of ${audio.seconds} s ...`);
    const row = await measure(w, jobs, audio);
    log(`  ${row.jobsPerSec} jobs/s, ${row.xRealTime}x real time (${row.wallSec} s, ${row.failed} failed)`);
    rows.push(row);
  }
  const machine = { cpus: availableParallelism(), cpu: cpus()[0]?.model ?? '', node: process.version };
  const base = rows[0]!;
  const lines = [
    `machine: ${machine.cpus} cores (${machine.cpu}), ${machine.node}; job: ${audio.seconds} s FLAC upload (${readFileSync(audio.path).length} bytes), speech+arousal+gender, output_period 1024`,
    '',
    '| worker processes | jobs | wall s | jobs/s | audio x-real-time | speed-up | mean job s | workers CPU s | API CPU s | failed | load avg |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.workers} | ${r.jobs} | ${r.wallSec} | ${r.jobsPerSec} | ${r.xRealTime} | ${round(r.jobsPerSec / base.jobsPerSec, 2)} | ${r.meanJobSec} | ${r.workerCpuSec} | ${r.apiCpuSec} | ${r.failed} | ${r.loadAvg1} |`,
    ),
  ];
  process.stdout.write(lines.join('\n') + '\n');
  writeFileSync(join(OUT, 'nats.json'), JSON.stringify({ machine, audio, at: new Date().toISOString(), rows }, null, 2));
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
