/**
 * Mixed load on one real `auris serve` process (embedded default, real models, 127.0.0.1 only):
 * C concurrent REST clients, each looping upload -> poll until finished -> fetch results, plus
 * S concurrent gRPC streaming clients, for a bounded time (and a bounded number of jobs). Then it
 * checks that every accepted job finished and succeeded, and that the server's RSS returns near
 * its baseline once idle.
 *
 *   npm run bench:load -- [--seconds 90] [--clients 8] [--streams 2] [--max-jobs 400] [--audio 4]
 *
 * Records throughput, p50/p99 per endpoint, errors by code, peak RSS (VmHWM), RSS before, during
 * and after, into bench/out/load-mixed.json (docs/reliability.md). Exit code 0 only when no job
 * was lost or failed and the RSS after settling is within 1.5x baseline + 64 MiB.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createClient, openAnalyzeStream } from '../../src/grpc/client';

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

async function main(): Promise<void> {
  const seconds = arg('seconds', 90);
  const clients = arg('clients', 8);
  const streams = arg('streams', 2);
  const maxJobs = arg('max-jobs', 400);
  const audioSec = arg('audio', 4);
  const dir = mkdtempSync(join(tmpdir(), 'auris-load-mixed-'));
  const wav = join(dir, 'in.wav');
  execFileSync('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', wav, 'synth', String(audioSec / 2), 'sine', '300', ':', 'synth', String(audioSec / 2), 'pinknoise', 'vol', '0.3']);
  const audio = readFileSync(wav);
  const pcm = audio.subarray(44); // s16le mono 16 kHz for the gRPC streams

  const child = spawn(process.execPath, [join(ROOT, 'dist/src/cli/main.js'), 'serve', '--host', '127.0.0.1', '--port', '0', '--grpc-port', '0', '--data-dir', join(dir, 'data')], {
    env: { ...process.env, API_KEYS: `${KEY}:org-load:proj-load`, RATE_LIMIT_RPS: '100000', RATE_LIMIT_BURST: '100000', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
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

  // Warm-up (models loaded, first job) and baseline.
  const warm = await timed('warmup', `${url}/file-processing/jobs?models=speech,arousal,gender&output_period=1024`, { method: 'POST', headers: { ...headers, 'content-type': 'audio/wav' }, body: audio });
  const warmId = ((await warm!.json()) as { job_id: string }).job_id;
  for (;;) {
    const j = (await (await fetch(`${url}/file-processing/jobs/${warmId}`, { headers })).json()) as { status: string };
    if (j.status === 'succeeded' || j.status === 'failed') break;
    await sleep(100);
  }
  await sleep(2000);
  const baseline = rssOf(pid).rssMb;
  let peakRss = baseline;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssOf(pid).rssMb)), 100);

  const accepted = new Set<string>();
  const finished = new Map<string, string>();
  let jobsStarted = 0;
  let streamsDone = 0;
  let streamSteps = 0;
  const streamStatus: Record<string, number> = {};
  const t0 = Date.now();
  const end = t0 + seconds * 1000;

  async function restClient(): Promise<void> {
    while (Date.now() < end && jobsStarted < maxJobs) {
      jobsStarted++;
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

  async function streamClient(): Promise<void> {
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

  await Promise.all([...Array.from({ length: clients }, restClient), ...Array.from({ length: streams }, streamClient)]);
  const wall = (Date.now() - t0) / 1000;
  clearInterval(sampler);
  const rssAtEnd = rssOf(pid).rssMb;
  // Settle: RSS should come back near the baseline (no leak).
  let rssAfter = rssAtEnd;
  for (let i = 0; i < 30; i++) {
    await sleep(1000);
    rssAfter = rssOf(pid).rssMb;
    if (rssAfter <= baseline * 1.5 + 64) break;
  }
  const hwm = rssOf(pid).hwmMb;
  child.kill('SIGTERM');
  const code = await new Promise<number | null>((r) => child.on('exit', r));

  const requests = Object.values(lat).reduce((n, xs) => n + xs.length, 0);
  const lost = [...accepted].filter((id) => !finished.has(id));
  const failed = [...finished.values()].filter((s) => s !== 'succeeded').length;
  const summary = {
    when: new Date().toISOString(),
    settings: { seconds, clients, streams, maxJobs, audioSec },
    wallSec: +wall.toFixed(1),
    requests,
    requestsPerSec: +(requests / wall).toFixed(1),
    jobs: { accepted: accepted.size, succeeded: finished.size - failed, failed, lost: lost.length, jobsPerSec: +(finished.size / wall).toFixed(2) },
    grpc: { streams: streamsDone, concurrent: streams, steps: streamSteps, statusCodes: streamStatus },
    latencyMs: Object.fromEntries(Object.entries(lat).map(([k, xs]) => [k, { n: xs.length, p50: +pct(xs, 50).toFixed(1), p99: +pct(xs, 99).toFixed(1), max: +Math.max(...xs).toFixed(1) }])),
    errors,
    rssMb: { baseline: +baseline.toFixed(0), peakSampled: +peakRss.toFixed(0), hwm: +hwm.toFixed(0), atEnd: +rssAtEnd.toFixed(0), afterSettle: +rssAfter.toFixed(0) },
    serverExitCode: code,
  };
  const ok = lost.length === 0 && failed === 0 && rssAfter <= baseline * 1.5 + 64 && code === 0;
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
