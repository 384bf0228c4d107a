/**
 * Mixed load on one real `auris serve` process (embedded default, real models, 127.0.0.1 only):
 * C concurrent REST clients, each looping upload -> poll until finished -> fetch results, plus
 * S concurrent gRPC streaming clients, in R rounds of a bounded time (and a bounded number of jobs
 * per round) separated by idle pauses. Then it checks that every accepted job finished and
 * succeeded, and tells a leak from allocator/heap retention: after the warm-up and after each
 * round, once idle, the server (started by this bench only with --expose-gc and the debug-only
 * preload bench/load/mem-hook.ts) is sent SIGUSR2, runs a full GC and reports
 * process.memoryUsage(). A leak grows round over round; retention plateaus.
 *
 *   npm run bench:load -- [--rounds 3] [--seconds 30] [--idle 10] [--clients 8] [--streams 2]
 *                         [--max-jobs 200] [--audio 4] [--malloc-arena-max N]
 *                         [--fair-long 15] [--fair-minutes 20]
 *
 * Then the fairness scenario of bench/load/fair.ts (project B's small job behind project A's
 * --fair-long jobs of --fair-minutes minutes of audio, CONCURRENCY=1; --fair-long 0 skips it).
 * (--seconds and --max-jobs are per round; --malloc-arena-max sets MALLOC_ARENA_MAX for the
 * server.) Records throughput, p50/p99 per endpoint, errors by code, peak RSS (VmHWM) and the
 * per-round idle samples into bench/out/load-mixed.json (docs/reliability.md). Exit code 0 only
 * when no job was lost or failed, V8 heapUsed after GC after every round is within
 * max(20%, 10 MiB) of its post-warm-up value, RSS after every round is within 10% of RSS after
 * round 1, and the server exits 0 on SIGTERM.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createClient, openAnalyzeStream } from '../../src/grpc/client';
import { runFairness } from './fair';

const ROOT = resolve(__dirname, '..', '..', '..');
const KEY = 'load-mixed-key-0001';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? Number(process.argv[i + 1]) : def;
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function rssOf(pid: number): { rssMb: number; hwmMb: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
  } catch {
    return { rssMb: 0, hwmMb: 0 };
  }
}

const lat: Record<string, number[]> = {};
const errors: Record<string, number> = {};
function record(endpoint: string, ms: number): void {
  (lat[endpoint] ??= []).push(ms);
}
function error(endpoint: string, code: string): void {
  errors[`${endpoint} ${code}`] = (errors[`${endpoint} ${code}`] ?? 0) + 1;
}
function pct(xs: number[], p: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function timed(endpoint: string, url: string, init?: RequestInit): Promise<Response | null> {
  const t0 = performance.now();
  try {
    const res = await fetch(url, init);
    const ms = performance.now() - t0;
    record(endpoint, ms);
    if (res.status >= 400) {
      const body = await res.clone().text();
      let code = String(res.status);
      try {
        code += ' ' + (JSON.parse(body) as { code?: string }).code;
      } catch {
        /* not JSON */
      }
      error(endpoint, code);
    }
    return res;
  } catch (e) {
    error(endpoint, (e as { cause?: { code?: string } }).cause?.code ?? 'NETWORK');
    return null;
  }
}

interface MemSample {
  rssMb: number;
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
  arrayBuffersMb: number;
}

async function main(): Promise<void> {
  const rounds = arg('rounds', 3);
  const seconds = arg('seconds', 30);
  const idleSec = arg('idle', 10);
  const clients = arg('clients', 8);
  const streams = arg('streams', 2);
  const maxJobs = arg('max-jobs', 200);
  const audioSec = arg('audio', 4);
  const arenaMax = arg('malloc-arena-max', 0);
  const dir = mkdtempSync(join(tmpdir(), 'auris-load-mixed-'));
  const wav = join(dir, 'in.wav');
  execFileSync('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', wav, 'synth', String(audioSec / 2), 'sine', '300', ':', 'synth', String(audioSec / 2), 'pinknoise', 'vol', '0.3']);
  const audio = readFileSync(wav);
  const pcm = audio.subarray(44); // s16le mono 16 kHz for the gRPC streams

  // Debug-only memory probe: --expose-gc and the bench's own preload, armed by an env var that
  // only this bench sets (never part of `auris serve` itself).
  const nodeArgs = ['--expose-gc', '--require', join(ROOT, 'dist/bench/load/mem-hook.js')];
  const env: NodeJS.ProcessEnv = { ...process.env, API_KEYS: `${KEY}:org-load:proj-load`, RATE_LIMIT_RPS: '100000', RATE_LIMIT_BURST: '100000', LOG_LEVEL: 'info', AURIS_BENCH_MEM_HOOK: '1' };
  if (arenaMax > 0) env.MALLOC_ARENA_MAX = String(arenaMax);
  const child = spawn(process.execPath, [...nodeArgs, join(ROOT, 'dist/src/cli/main.js'), 'serve', '--host', '127.0.0.1', '--port', '0', '--grpc-port', '0', '--data-dir', join(dir, 'data')], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const memLines: string[] = [];
  let errTail = '';
  child.stdout.on('data', (d) => (log = (log + d).slice(-200_000)));
  child.stderr.on('data', (d) => {
    errTail += String(d);
    const parts = errTail.split('\n');
    errTail = parts.pop()!;
    for (const l of parts) if (l.startsWith('AURIS_MEM ')) memLines.push(l.slice(10));
    else log = (log + l + '\n').slice(-200_000);
  });
  const deadline = Date.now() + 120_000;
  let url = '';
  let grpcPort = 0;
  while (!url || !grpcPort) {
    url = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(log)?.[1] ?? '';
    grpcPort = Number(/"port":(\d+),"service":"audioanalysis/.exec(log)?.[1] ?? 0);
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('server did not start:\n' + log.slice(-2000));
    await sleep(100);
  }
  const pid = child.pid!;
  const headers = { 'x-api-key': KEY };
  const MB = 1024 * 1024;

  async function memSample(): Promise<MemSample> {
    const n = memLines.length;
    child.kill('SIGUSR2');
    const until = Date.now() + 10_000;
    while (memLines.length === n) {
      if (Date.now() > until) throw new Error('no AURIS_MEM answer to SIGUSR2 (mem-hook not loaded?)');
      await sleep(50);
    }
    const m = JSON.parse(memLines[n]!) as Record<string, number>;
    const mb = (x: number): number => +(x / MB).toFixed(1);
    return { rssMb: mb(m.rss!), heapUsedMb: mb(m.heapUsed!), heapTotalMb: mb(m.heapTotal!), externalMb: mb(m.external!), arrayBuffersMb: mb(m.arrayBuffers!) };
  }

  // Warm-up (models loaded, first job) and baseline.
  const warm = await timed('warmup', `${url}/file-processing/jobs?models=speech,arousal,gender&output_period=1024`, { method: 'POST', headers: { ...headers, 'content-type': 'audio/wav' }, body: audio });
  const warmId = ((await warm!.json()) as { job_id: string }).job_id;
  for (;;) {
    const j = (await (await fetch(`${url}/file-processing/jobs/${warmId}`, { headers })).json()) as { status: string };
    if (j.status === 'succeeded' || j.status === 'failed') break;
    await sleep(100);
  }
  await sleep(2000);
  const baselineMem = await memSample();
  const baseline = rssOf(pid).rssMb;
  let peakRss = baseline;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssOf(pid).rssMb)), 100);

  const accepted = new Set<string>();
  const finished = new Map<string, string>();
  let streamsDone = 0;
  let streamSteps = 0;
  const streamStatus: Record<string, number> = {};
  const t0 = Date.now();
  let loadMs = 0;

  async function restClient(end: number, round: { started: number }): Promise<void> {
    while (Date.now() < end && round.started < maxJobs) {
      round.started++;
      const res = await timed('POST /file-processing/jobs', `${url}/file-processing/jobs?models=speech,arousal,gender&output_period=1024&include_summary=true`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'audio/wav' },
        body: audio,
      });
      if (!res || res.status !== 201) {
        await sleep(200);
        continue;
      }
      const id = ((await res.json()) as { job_id: string }).job_id;
      accepted.add(id);
      for (;;) {
        await sleep(150);
        const r = await timed('GET /file-processing/jobs/{id}', `${url}/file-processing/jobs/${id}`, { headers });
        if (!r) continue;
        const j = (await r.json()) as { status: string };
        if (j.status === 'succeeded' || j.status === 'failed') {
          finished.set(id, j.status);
          break;
        }
      }
      if (finished.get(id) === 'succeeded') {
        const r = await timed('GET /file-processing/jobs/{id}/results', `${url}/file-processing/jobs/${id}/results`, { headers });
        if (r) await r.arrayBuffer();
      }
    }
  }

  async function streamClient(end: number): Promise<void> {
    const client = createClient(`127.0.0.1:${grpcPort}`);
    try {
      while (Date.now() < end) {
        const ts = performance.now();
        const h = openAnalyzeStream(client, KEY, { models: ['speech', 'arousal', 'gender'], output_period: 1024, sample_rate: 16000, encoding: 'PCM_S16LE', channels: 1 });
        h.call.on('data', () => streamSteps++);
        for (let off = 0; off < pcm.length; off += 6400) await h.send(pcm.subarray(off, Math.min(pcm.length, off + 6400)));
        h.end();
        const st = await h.status;
        record('gRPC Analyze (whole stream)', performance.now() - ts);
        streamStatus[String(st.code)] = (streamStatus[String(st.code)] ?? 0) + 1;
        if (st.code !== 0) error('gRPC Analyze', `status ${st.code}`);
        streamsDone++;
      }
    } finally {
      client.close();
    }
  }

  const roundSamples: Array<MemSample & { round: number; jobs: number; streams: number; rssAtEndMb: number }> = [];
  for (let r = 1; r <= rounds; r++) {
    const jobs0 = accepted.size;
    const streams0 = streamsDone;
    const ts = Date.now();
    const end = ts + seconds * 1000;
    const round = { started: 0 };
    await Promise.all([...Array.from({ length: clients }, () => restClient(end, round)), ...Array.from({ length: streams }, () => streamClient(end))]);
    loadMs += Date.now() - ts;
    const rssAtEnd = rssOf(pid).rssMb;
    await sleep(idleSec * 1000);
    const m = await memSample();
    roundSamples.push({ round: r, jobs: accepted.size - jobs0, streams: streamsDone - streams0, rssAtEndMb: +rssAtEnd.toFixed(1), ...m });
    console.error(`round ${r}: ${JSON.stringify(roundSamples[roundSamples.length - 1])}`);
  }
  const wall = loadMs / 1000;
  clearInterval(sampler);
  const hwm = rssOf(pid).hwmMb;
  child.kill('SIGTERM');
  const code = await new Promise<number | null>((r) => child.on('exit', r));

  // Verdict: a leak grows round over round; retention (V8 heap kept, malloc arenas) plateaus.
  const heapLimit = Math.max(baselineMem.heapUsedMb * 1.2, baselineMem.heapUsedMb + 10);
  const heapOk = roundSamples.every((s) => s.heapUsedMb <= heapLimit);
  const rssLimit = (roundSamples[0]?.rssMb ?? 0) * 1.1;
  const rssOk = roundSamples.every((s) => s.rssMb <= rssLimit);

  // Fair scheduling between projects (bench/load/fair.ts), on a server of its own; --fair-long 0 skips it.
  const fairLong = arg('fair-long', 15);
  const fairness = fairLong > 0 ? await runFairness(fairLong, arg('fair-minutes', 20)) : null;

  const requests = Object.values(lat).reduce((n, xs) => n + xs.length, 0);
  const lost = [...accepted].filter((id) => !finished.has(id));
  const failed = [...finished.values()].filter((s) => s !== 'succeeded').length;
  const summary = {
    when: new Date().toISOString(),
    settings: { rounds, seconds, idleSec, clients, streams, maxJobsPerRound: maxJobs, audioSec, mallocArenaMax: arenaMax || null },
    loadSec: +wall.toFixed(1),
    totalSec: +((Date.now() - t0) / 1000).toFixed(1),
    requests,
    requestsPerSec: +(requests / wall).toFixed(1),
    jobs: { accepted: accepted.size, succeeded: finished.size - failed, failed, lost: lost.length, jobsPerSec: +(finished.size / wall).toFixed(2) },
    grpc: { streams: streamsDone, concurrent: streams, steps: streamSteps, statusCodes: streamStatus },
    latencyMs: Object.fromEntries(Object.entries(lat).map(([k, xs]) => [k, { n: xs.length, p50: +pct(xs, 50).toFixed(1), p99: +pct(xs, 99).toFixed(1), max: +Math.max(...xs).toFixed(1) }])),
    errors,
    memory: {
      baselineAfterWarmup: baselineMem,
      rounds: roundSamples,
      peakRssSampledMb: +peakRss.toFixed(0),
      hwmMb: +hwm.toFixed(0),
      heapUsedLimitMb: +heapLimit.toFixed(1),
      rssLimitMb: +rssLimit.toFixed(1),
      heapOk,
      rssOk,
    },
    serverExitCode: code,
    fairness,
  };
  // Fair: project B's one job ran after at most one of project A's jobs (the one already running).
  const fairOk = !fairness || fairness.smallJobRanAfterLongJobs <= 1;
  const ok = lost.length === 0 && failed === 0 && heapOk && rssOk && code === 0 && fairOk;
  console.log(JSON.stringify(summary, null, 2));
  console.log(ok ? 'OK' : 'FAILED');
  mkdirSync(join(ROOT, 'bench', 'out'), { recursive: true });
  writeFileSync(join(ROOT, 'bench', 'out', 'load-mixed.json'), JSON.stringify({ ...summary, ok }, null, 2) + '\n');
  rmSync(dir, { recursive: true, force: true });
  process.exitCode = ok ? 0 : 1;
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
