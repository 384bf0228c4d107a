/**
 * Load test of the REST service: starts a real `auris serve` process on the embedded default,
 * submits N jobs (default 200) at once, each with a callback to a local receiver, waits for
 * every callback, then checks every job: all finished and succeeded, none lost, callbacks
 * counted (duplicates by event id), and reports the server's peak RSS.
 *
 *   npm run build:ts && node dist/bench/load/run.js [--jobs 200] [--seconds 2] [--method upload|url] [--concurrency N]
 *
 * Writes bench/out/load.json.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..');
const KEY = 'load-test-key-0001';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : def;
}

function procStatus(pid: number): { rssKb: number; hwmKb: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const num = (k: string): number => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
    return { rssKb: num('VmRSS'), hwmKb: num('VmHWM') };
  } catch {
    return { rssKb: 0, hwmKb: 0 };
  }
}

async function main(): Promise<void> {
  const jobs = Number(arg('jobs', '200'));
  const seconds = Number(arg('seconds', '2'));
  const method = arg('method', 'upload');
  const concurrency = arg('concurrency', '');
  const dir = mkdtempSync(join(tmpdir(), 'auris-load-'));
  const wav = join(dir, 'in.wav');
  // Half tone, half noise: real work for every model.
  execFileSync('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', wav, 'synth', String(seconds / 2), 'sine', '300', ':', 'synth', String(seconds / 2), 'pinknoise', 'vol', '0.3']);
  const audio = readFileSync(wav);

  // Callback receiver (+ file host for the URL method).
  const callbacks: Array<{ jobId: string; eventId: string; attempt: string; status: string; at: number }> = [];
  const receiver = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/in.wav') {
      res.writeHead(200, { 'content-type': 'audio/wav' }).end(audio);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { job_id: string; status: string };
      callbacks.push({
        jobId: body.job_id,
        eventId: String(req.headers['x-auris-event-id']),
        attempt: String(req.headers['x-auris-attempt']),
        status: body.status,
        at: Date.now(),
      });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const rxBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', DATA_DIR: join(dir, 'data'), API_KEYS: `${KEY}:load:load`, LOG_LEVEL: 'warn', URL_ALLOWLIST: '127.0.0.1' }; // the file host and callback receiver are local
  if (concurrency) env.CONCURRENCY = concurrency;
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'cli', 'main.js'), 'serve', '--port', '0', '--log-level', 'info'], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((res, rej) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /"url":"(http:\/\/[^"]+)".*auris serving|auris serving.*"url":"(http:\/\/[^"]+)"/.exec(buf);
      if (m) res((m[1] ?? m[2])!);
    });
    child.on('exit', (c) => rej(new Error(`serve exited ${c}\n${buf}`)));
  });
  child.stdout!.resume();
  const pid = child.pid!;
  let peakRssKb = 0;
  const sampler = setInterval(() => {
    peakRssKb = Math.max(peakRssKb, procStatus(pid).rssKb);
  }, 100);
  const baseline = procStatus(pid).rssKb;

  // Submit all at once.
  const t0 = Date.now();
  const callback = encodeURIComponent(`${rxBase}/hook`);
  const query = `models=speech,arousal,gender&output_period=1024&include_summary=true&include_transitions=true&callback=${callback}`;
  const responses = await Promise.all(
    Array.from({ length: jobs }, () =>
      fetch(`${url}/file-processing/jobs?${query}`, {
        method: 'POST',
        headers: method === 'url' ? { 'x-api-key': KEY, 'content-type': 'application/json' } : { 'x-api-key': KEY, 'content-type': 'audio/wav' },
        body: method === 'url' ? JSON.stringify({ url: `${rxBase}/in.wav` }) : audio,
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { job_id?: string; code?: string } })),
    ),
  );
  const submitMs = Date.now() - t0;
  const ids = responses.filter((r) => r.status === 201).map((r) => r.body.job_id!);
  const rejected = responses.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.body.code}`);
  console.log(`submitted ${jobs} jobs in ${submitMs} ms: ${ids.length} accepted${rejected.length ? `, rejected: ${rejected.join(', ')}` : ''}`);

  // Wait for a callback of every accepted job.
  const deadline = Date.now() + 30 * 60_000;
  let lastPrint = 0;
  for (;;) {
    const distinct = new Set(callbacks.map((c) => c.jobId)).size;
    if (Date.now() - lastPrint > 5000) {
      lastPrint = Date.now();
      console.log(`  ${((Date.now() - t0) / 1000).toFixed(1)} s: ${distinct}/${ids.length} callbacks, server RSS ${(procStatus(pid).rssKb / 1024).toFixed(0)} MiB`);
    }
    if (distinct >= ids.length || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const allMs = Date.now() - t0;
  await new Promise((r) => setTimeout(r, 500)); // late duplicates, if any

  // Check every job.
  const statuses: Record<string, number> = {};
  let resultsOk = 0;
  for (const id of ids) {
    const j = (await (await fetch(`${url}/file-processing/jobs/${id}`, { headers: { 'x-api-key': KEY } })).json()) as { status?: string; code?: string };
    const s = j.status ?? `missing(${j.code})`;
    statuses[s] = (statuses[s] ?? 0) + 1;
    if (s === 'succeeded') {
      const r = await fetch(`${url}/file-processing/jobs/${id}/results`, { headers: { 'x-api-key': KEY } });
      const env2 = (await r.json()) as { job_id?: string; result?: { channels?: Record<string, unknown> } };
      if (r.status === 200 && env2.job_id === id && env2.result?.channels?.['0']) resultsOk++;
    }
  }
  const metrics = await (await fetch(`${url}/metrics`)).text();
  clearInterval(sampler);
  const hwm = procStatus(pid).hwmKb;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  receiver.close();

  const byJob = new Set(callbacks.map((c) => c.jobId));
  const byEvent = new Set(callbacks.map((c) => c.eventId));
  const report = {
    jobs,
    method,
    audio_seconds_per_job: seconds,
    accepted: ids.length,
    rejected: rejected.length,
    statuses,
    results_ok: resultsOk,
    lost: ids.filter((id) => !byJob.has(id)).length,
    callbacks_received: callbacks.length,
    callbacks_distinct_jobs: byJob.size,
    callbacks_distinct_events: byEvent.size,
    callback_duplicates: callbacks.length - byEvent.size,
    callbacks_not_succeeded: callbacks.filter((c) => c.status !== 'succeeded').length,
    submit_ms: submitMs,
    all_done_ms: allMs,
    jobs_per_second: +(ids.length / (allMs / 1000)).toFixed(2),
    audio_x_realtime: +((ids.length * seconds) / (allMs / 1000)).toFixed(1),
    server_rss_baseline_mib: +(baseline / 1024).toFixed(1),
    server_peak_rss_mib: +(Math.max(peakRssKb, hwm) / 1024).toFixed(1),
    callback_attempt_metrics: metrics.split('\n').filter((l) => l.startsWith('auris_callback_attempts_total')),
  };
  console.log(JSON.stringify(report, null, 2));
  mkdirSync(join(ROOT, 'bench', 'out'), { recursive: true });
  writeFileSync(join(ROOT, 'bench', 'out', 'load.json'), JSON.stringify(report, null, 2));
  rmSync(dir, { recursive: true, force: true });
  const ok = report.accepted === jobs && report.lost === 0 && statuses.succeeded === jobs && resultsOk === jobs && report.callbacks_distinct_jobs === jobs;
  console.log(ok ? `LOAD OK: ${jobs}/${jobs} jobs succeeded, ${jobs} callbacks, none lost` : 'LOAD FAILED');
  process.exitCode = ok ? 0 : 1;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
