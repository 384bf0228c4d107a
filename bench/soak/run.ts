/**
 * Soak run (docs/reliability.md, "Soak"): one real `auris serve` (embedded, real models,
 * 127.0.0.1 only) for a long time at a modest rate, restarted every few minutes (SIGTERM and
 * SIGKILL in turn, same data directory and ports), with
 *
 *  - upload clients (3 models, a 4 s WAV), each job with a callback;
 *  - a URL-job client: good URLs, a 404 and a closed port (expected DOWNLOAD_FAILED);
 *  - callbacks that fail: a receiver answering 500, one that hangs past the callback timeout,
 *    a closed port; a quarter of the callbacks succeed;
 *  - a gRPC client whose streams idle between chunks;
 *  - an attacker holding --silent-grpc (1,000) silent TCP connections to the gRPC port, spread
 *    over 16 addresses (127.0.0.2-17), each reopened 1 s after the server closes it;
 *  - a keyless flood: --flood-rps requests per second without an API key from 127.0.0.100.
 *
 * The good key's job creations are timed (p50/p99 of POST /file-processing/jobs; creations that
 * overlap a restart are reported apart: they wait for the restart).
 * At the end every accepted job is polled until it is finished and accounted for: succeeded,
 * failed with the expected code, or not (unexpected failure, lost). Memory: the server is
 * started with --expose-gc and the bench's debug-only preload (bench/load/mem-hook.ts);
 * every `--sample` seconds it is sent SIGUSR2 and reports process.memoryUsage() after a full
 * GC. Verdict: no job lost or failed unexpectedly, p99 of the good key's job creation under
 * 200 ms, and RSS after GC flat (the median of the
 * last third of the samples within 15% + 10 MiB of the median of the first third, each process
 * life's first sample after its warm-up excluded).
 *
 *   npm run bench:soak -- [--minutes 30] [--restart-every 300 (0: never)] [--uploaders 2] [--pause 2]
 *                         [--sample 60] [--audio 4] [--silent-grpc 1000] [--flood-rps 50]
 *
 * Writes bench/out/soak.json. Run it under `nice` on a shared machine.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer, type Server } from 'node:http';
import { request as httpRequest } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createClient, openAnalyzeStream } from '../../src/grpc/client';

const ROOT = resolve(__dirname, '..', '..', '..');
const KEY = 'soak-key-000000001';
const MODELS = 'speech,arousal,gender';
const MB = 1024 * 1024;

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? Number(process.argv[i + 1]) : def;
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const count = (m: Record<string, number>, k: string): void => void (m[k] = (m[k] ?? 0) + 1);

async function freePort(): Promise<number> {
  const s = createTcpServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** One `auris serve` process life on fixed ports and a fixed data directory. */
class ServerProcess {
  child!: ChildProcess;
  private log = '';
  private errTail = '';
  readonly mem: Array<Record<string, number>> = [];
  exited: Promise<number | null> = Promise.resolve(null);

  constructor(
    private readonly url: string,
    private readonly env: NodeJS.ProcessEnv,
    private readonly args: string[],
  ) {}

  async start(): Promise<void> {
    this.log = '';
    this.child = spawn(process.execPath, ['--expose-gc', '--require', join(ROOT, 'dist/bench/load/mem-hook.js'), join(ROOT, 'dist/src/cli/main.js'), 'serve', ...this.args], {
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((r) => this.child.on('exit', (code) => r(code)));
    this.child.stdout!.on('data', (d) => (this.log = (this.log + d).slice(-100_000)));
    this.child.stderr!.on('data', (d) => {
      this.errTail += String(d);
      const parts = this.errTail.split('\n');
      this.errTail = parts.pop()!;
      for (const l of parts) if (l.startsWith('AURIS_MEM ')) this.mem.push(JSON.parse(l.slice(10)) as Record<string, number>);
    });
    const deadline = Date.now() + 180_000;
    for (;;) {
      if (Date.now() > deadline || this.child.exitCode !== null) throw new Error('server did not start:\n' + this.log.slice(-2000));
      const ready = await fetch(`${this.url}/readyz`).then((r) => r.status === 200, () => false);
      if (ready) break;
      await sleep(250);
    }
  }

  /** process.memoryUsage() after a full GC, MiB. */
  async memory(): Promise<{ rssMb: number; heapUsedMb: number }> {
    const n = this.mem.length;
    this.child.kill('SIGUSR2');
    const until = Date.now() + 20_000;
    while (this.mem.length === n) {
      if (Date.now() > until) throw new Error('no AURIS_MEM answer');
      await sleep(50);
    }
    const m = this.mem[n]!;
    return { rssMb: +(m.rss! / MB).toFixed(1), heapUsedMb: +(m.heapUsed! / MB).toFixed(1) };
  }

  async stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<number | null> {
    this.child.kill(signal);
    return this.exited;
  }
}

/** Silent TCP connections to the gRPC port from 16 addresses, each reopened 1 s after it is closed, until `end`. */
function silentAttacker(port: number, total: number, end: number): { opened: number; closedByServer: number; done: Promise<void> } {
  const stats = { opened: 0, closedByServer: 0, done: Promise.resolve() };
  const slot = (i: number): Promise<void> =>
    new Promise((resolve) => {
      const open = (): void => {
        if (Date.now() >= end) return resolve();
        const socket = connect({ host: '127.0.0.1', port, localAddress: `127.0.0.${2 + (i % 16)}` });
        stats.opened++;
        socket.on('error', () => undefined);
        socket.resume();
        const stop = setTimeout(() => socket.destroy(), Math.max(0, end - Date.now()));
        socket.on('close', () => {
          clearTimeout(stop);
          if (Date.now() < end) stats.closedByServer++;
          setTimeout(open, 1000);
        });
      };
      open();
    });
  stats.done = Promise.all(Array.from({ length: total }, (_, i) => slot(i))).then(() => undefined);
  return stats;
}

/** Keyless requests from 127.0.0.100 at `rps` until `end`; answers counted by status. */
async function keylessFlood(url: string, rps: number, end: number, statuses: Record<string, number>): Promise<void> {
  const u = new URL(url);
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const req = httpRequest({ host: u.hostname, port: u.port, path: '/file-processing/jobs', localAddress: '127.0.0.100', agent: false }, (res) => {
        count(statuses, String(res.statusCode));
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', () => {
        count(statuses, 'network');
        resolve();
      });
      req.end();
    });
  const inFlight = new Set<Promise<void>>();
  while (rps > 0 && Date.now() < end) {
    const p = one();
    inFlight.add(p);
    void p.then(() => inFlight.delete(p));
    await sleep(1000 / rps);
  }
  await Promise.all(inFlight);
}

interface Tracked {
  kind: 'upload' | 'url-ok' | 'url-404' | 'url-closed';
  callback: string;
}

async function main(): Promise<void> {
  const minutes = arg('minutes', 30);
  const restartEverySec = arg('restart-every', 300);
  const uploaders = arg('uploaders', 2);
  const pauseSec = arg('pause', 2);
  const sampleSec = arg('sample', 60);
  const audioSec = arg('audio', 4);
  const silentGrpc = arg('silent-grpc', 1000);
  const floodRps = arg('flood-rps', 50);
  const dir = mkdtempSync(join(tmpdir(), 'auris-soak-'));
  const wav = join(dir, 'in.wav');
  execFileSync('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', wav, 'synth', String(audioSec / 2), 'sine', '300', ':', 'synth', String(audioSec / 2), 'pinknoise', 'vol', '0.3']);
  const audio = readFileSync(wav);
  const pcm = audio.subarray(44);

  // A file host for URL jobs and callback receivers that succeed, fail (500), hang, or are not there.
  const files = createHttpServer((req, res) => (req.url === '/a.wav' ? res.writeHead(200, { 'content-type': 'audio/wav' }).end(audio) : res.writeHead(404).end()));
  const filesUrl = await listen(files);
  const callbacksSeen: Record<string, number> = {};
  const receiver = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count(callbacksSeen, req.url ?? '');
      if (req.url === '/ok') res.writeHead(200).end();
      else if (req.url === '/fail') res.writeHead(500).end();
      // '/hang': never answered (the callback timeout applies)
    });
  });
  const receiverUrl = await listen(receiver);
  const closedUrl = `http://127.0.0.1:${await freePort()}`;
  const callbackTargets = [`${receiverUrl}/ok`, `${receiverUrl}/fail`, `${receiverUrl}/hang`, `${closedUrl}/hook`];

  const port = await freePort();
  const grpcPort = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    API_KEYS: `${KEY}:org-soak:proj-soak`,
    URL_ALLOWLIST: '127.0.0.1',
    CALLBACK_TIMEOUT_MS: '2000',
    CALLBACK_BACKOFF_MS: '500',
    LOG_LEVEL: 'warn',
    AURIS_BENCH_MEM_HOOK: '1',
  };
  const server = new ServerProcess(url, env, ['--host', '127.0.0.1', '--port', String(port), '--grpc-port', String(grpcPort), '--data-dir', join(dir, 'data'), '--concurrency', '1']);
  await server.start();

  const headers = { 'x-api-key': KEY };
  const tracked = new Map<string, Tracked>();
  const httpErrors: Record<string, number> = {};
  const grpcStatus: Record<string, number> = {};
  const floodStatus: Record<string, number> = {};
  const createMs: number[] = [];
  /** Job creations that overlapped a restart (their wait is the restart's, not the service's). */
  const createMsInRestart: number[] = [];
  let restarting = false;
  let n = 0;
  const t0 = Date.now();
  const end = t0 + minutes * 60_000;

  async function create(kind: Tracked['kind']): Promise<void> {
    const callback = callbackTargets[n++ % callbackTargets.length]!;
    const q = `models=${MODELS}&output_period=1024&include_summary=true&callback=${encodeURIComponent(callback)}`;
    const init: RequestInit =
      kind === 'upload'
        ? { method: 'POST', headers: { ...headers, 'content-type': 'audio/wav' }, body: audio }
        : {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: JSON.stringify({ url: kind === 'url-ok' ? `${filesUrl}/a.wav` : kind === 'url-404' ? `${filesUrl}/missing.wav` : `${closedUrl}/a.wav` }),
          };
    try {
      const started = performance.now();
      const duringRestart = restarting;
      const res = await fetch(`${url}/file-processing/jobs?${q}`, init);
      if (res.status === 201 && kind === 'upload') (duringRestart || restarting ? createMsInRestart : createMs).push(performance.now() - started);
      if (res.status === 201) tracked.set(((await res.json()) as { job_id: string }).job_id, { kind, callback });
      else count(httpErrors, `POST ${res.status}`);
    } catch {
      count(httpErrors, 'POST network (restart)');
    }
  }

  const uploader = async (): Promise<void> => {
    while (Date.now() < end) {
      await create('upload');
      await sleep(pauseSec * 1000);
    }
  };
  const urlClient = async (): Promise<void> => {
    const kinds: Tracked['kind'][] = ['url-ok', 'url-ok', 'url-404', 'url-closed'];
    for (let i = 0; Date.now() < end; i++) {
      await create(kinds[i % kinds.length]!);
      await sleep(pauseSec * 2000);
    }
  };
  const streamer = async (): Promise<void> => {
    while (Date.now() < end) {
      const client = createClient(`127.0.0.1:${grpcPort}`);
      try {
        const h = openAnalyzeStream(client, KEY, { models: MODELS.split(','), output_period: 1024, sample_rate: 16000, encoding: 'PCM_S16LE', channels: 1 });
        h.call.on('data', () => undefined);
        for (let off = 0; off < pcm.length; off += 32_000) {
          await h.send(pcm.subarray(off, Math.min(pcm.length, off + 32_000)));
          await sleep(3000); // a stream that idles between chunks
        }
        h.end();
        count(grpcStatus, String((await h.status).code));
      } catch {
        count(grpcStatus, 'error (restart)');
      } finally {
        client.close();
      }
      await sleep(2000);
    }
  };

  // Memory samples every `sampleSec`, restarts every `restartEverySec` (SIGTERM and SIGKILL in turn).
  const samples: Array<{ atSec: number; life: number; rssMb: number; heapUsedMb: number }> = [];
  const restarts: Array<{ atSec: number; signal: string; exitCode: number | null }> = [];
  let life = 1;
  let lifeStarted = Date.now();
  const supervisor = async (): Promise<void> => {
    let nextSample = Date.now() + sampleSec * 1000;
    while (Date.now() < end) {
      await sleep(1000);
      if (Date.now() >= nextSample) {
        nextSample += sampleSec * 1000;
        try {
          samples.push({ atSec: Math.round((Date.now() - t0) / 1000), life, ...(await server.memory()) });
        } catch (e) {
          console.error(`sample failed: ${(e as Error).message}`);
        }
      }
      if (restartEverySec > 0 && Date.now() - lifeStarted >= restartEverySec * 1000 && end - Date.now() > 60_000) {
        const signal = restarts.length % 2 === 0 ? 'SIGTERM' : 'SIGKILL';
        restarting = true;
        const exitCode = await server.stop(signal);
        restarts.push({ atSec: Math.round((Date.now() - t0) / 1000), signal, exitCode });
        console.error(`restart ${restarts.length} (${signal}, exit ${exitCode}) at ${restarts[restarts.length - 1]!.atSec} s; jobs so far ${tracked.size}`);
        await server.start();
        restarting = false;
        life++;
        lifeStarted = Date.now();
      }
    }
  };

  const attacker = silentAttacker(grpcPort, silentGrpc, end);
  await Promise.all([...Array.from({ length: uploaders }, uploader), urlClient(), streamer(), supervisor(), keylessFlood(url, floodRps, end, floodStatus), attacker.done]);
  const loadSec = (Date.now() - t0) / 1000;

  // Account for every accepted job.
  const outcome: Record<string, number> = {};
  const unexpected: Array<{ id: string; kind: string; status: string; code?: string }> = [];
  const callbackStates: Record<string, number> = {};
  const expected: Record<Tracked['kind'], string> = { upload: 'succeeded', 'url-ok': 'succeeded', 'url-404': 'failed DOWNLOAD_FAILED', 'url-closed': 'failed DOWNLOAD_FAILED' };
  const settleBy = Date.now() + 10 * 60_000;
  for (const [id, t] of tracked) {
    let got = 'lost';
    for (;;) {
      try {
        const res = await fetch(`${url}/file-processing/jobs/${id}`, { headers });
        if (res.status === 404) break;
        const j = (await res.json()) as { status: string; error: { code: string } | null; callback?: { state: string } | null };
        if (j.status === 'succeeded' || j.status === 'failed') {
          got = j.status === 'failed' ? `failed ${j.error?.code}` : 'succeeded';
          if (j.callback) count(callbackStates, `${t.callback.replace(/^http:\/\/127\.0\.0\.1:\d+/, '')} ${j.callback.state}`);
          break;
        }
      } catch {
        /* retried below */
      }
      if (Date.now() > settleBy) {
        got = 'not finished';
        break;
      }
      await sleep(500);
    }
    count(outcome, `${t.kind}: ${got}`);
    if (got !== expected[t.kind]) unexpected.push({ id, kind: t.kind, status: got });
  }
  const finalMem = await server.memory();
  const exitCode = await server.stop('SIGTERM');
  files.close();
  receiver.closeAllConnections();
  receiver.close();

  // RSS flat: the first sample of each process life (right after its warm-up) is left out.
  const steady = samples.filter((s, i) => i > 0 && samples[i - 1]!.life === s.life);
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const third = Math.max(1, Math.floor(steady.length / 3));
  const firstRss = median(steady.slice(0, third).map((s) => s.rssMb));
  const lastRss = median(steady.slice(-third).map((s) => s.rssMb));
  const rssFlat = steady.length >= 2 && lastRss <= firstRss * 1.15 + 10;
  const sorted = [...createMs].sort((a, b) => a - b);
  const pct = (p: number): number => +(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN).toFixed(1);
  const createLatency = {
    n: sorted.length,
    p50: pct(50),
    p99: pct(99),
    max: +(sorted[sorted.length - 1] ?? NaN).toFixed(1),
    over200Ms: sorted.filter((ms) => ms >= 200).length,
    slowest: sorted.slice(-5).map((ms) => +ms.toFixed(1)),
    overlappingARestart: { n: createMsInRestart.length, maxMs: +Math.max(0, ...createMsInRestart).toFixed(1) },
  };
  const summary = {
    when: new Date().toISOString(),
    settings: { minutes, restartEverySec, uploaders, pauseSec, sampleSec, audioSec, concurrency: 1, silentGrpc, floodRps },
    goodKeyCreateMs: createLatency,
    attack: { silentGrpcOpened: attacker.opened, silentGrpcClosedByServer: attacker.closedByServer, keylessFloodStatuses: floodStatus },
    loadSec: Math.round(loadSec),
    jobs: { accepted: tracked.size, outcome, unexpected: unexpected.slice(0, 20), unexpectedCount: unexpected.length },
    callbacks: { receivedByPath: callbacksSeen, finalStateByTarget: callbackStates },
    grpcStreams: grpcStatus,
    httpErrors,
    restarts,
    memory: { samples, finalAfterGc: finalMem, steadyFirstThirdMedianRssMb: firstRss, steadyLastThirdMedianRssMb: lastRss, rssFlat },
    serverExitCode: exitCode,
  };
  const ok = unexpected.length === 0 && rssFlat && exitCode === 0 && createLatency.p99 < 200;
  console.log(JSON.stringify(summary, null, 2));
  console.log(ok ? 'OK' : 'FAILED');
  mkdirSync(join(ROOT, 'bench', 'out'), { recursive: true });
  writeFileSync(join(ROOT, 'bench', 'out', 'soak.json'), JSON.stringify({ ...summary, ok }, null, 2) + '\n');
  rmSync(dir, { recursive: true, force: true });
  process.exitCode = ok ? 0 : 1;
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
