/**
 * The streaming service alone, for bench/grpc/run.ts (its own process, so the load generator
 * does not share its event loop): src/app.ts with gRPC and the WebSocket over one StreamHub, no
 * job workers. Prints {"port", "url", "pid"} as one JSON line once listening (port: gRPC, url:
 * REST/WebSocket); on stdin "cpu\n" reports its CPU time, inference round trips, event-loop delay, worker
 * messages and main-thread GCs since the last report ("mem\n": memory); exits on SIGTERM after a clean shutdown.
 * Options from the environment: AURIS_INFERENCE_THREADS (engine workers), GRPC_MAX_BATCH, GRPC_DISPATCH_INTERVAL_MS, GRPC_DEPTH (hand-overs a worker may hold), GRPC_BUNDLE (batches per hand-over), GRPC_BEHIND_WAIT_MS (queue wait over which speech's provisional head calls every other step; Infinity: never),
 * GRPC_STATEFUL=0 (windowed calls only, no stateful streaming graphs: the reference).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { startApp } from '../../src/app';
import { trimNativeMemory } from '../../src/audio';
import { defaultConfig } from '../../src/config';
import { BENCH_KEY, type Trips } from './server-process';


type InferenceEngine = NonNullable<Awaited<ReturnType<typeof startApp>>['hub']>['engine'];
const round1 = (x: number): number => Math.round(x * 10) / 10;

/** Percentiles of round trips (submitted -> answer back, ms) recorded by `timed`; take() reads and resets. */
function tripRecorder(): { timed: <T>(p: Promise<T>, t0: number) => Promise<T>; take: () => Trips } {
  let trips: number[] = [];
  return {
    timed: (p, t0) => {
      void p.then(() => trips.push(performance.now() - t0), () => undefined);
      return p;
    },
    take: () => {
      const sorted = trips.sort((a, b) => a - b);
      trips = [];
      const q = (p: number): number => round1(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN);
      return { n: sorted.length, p50: q(0.5), p99: q(0.99), max: q(1) };
    },
  };
}

/** The networks' calls (queue + worker + message, ms) and, apart, the pretrained encoders' windows. */
function probeRoundTrips(engine: InferenceEngine): () => { networks: Trips; encoders: Trips } {
  const nets = tripRecorder();
  const encs = tripRecorder();
  const infer = engine.infer.bind(engine);
  engine.infer = (model, features, steps, urgent) => nets.timed(infer(model, features, steps, urgent), performance.now());
  const inferStateful = engine.inferStateful.bind(engine);
  engine.inferStateful = (model, first, features, steps, state) => nets.timed(inferStateful(model, first, features, steps, state), performance.now());
  const runEncoder = engine.pool.runEncoder.bind(engine.pool);
  engine.pool.runEncoder = (model, pcm) => encs.timed(runEncoder(model, pcm), performance.now());
  return () => ({ networks: nets.take(), encoders: encs.take() });
}

/** Main-thread garbage collections, count and pause ms by kind (minor / major / ...); take() reads and resets. */
function probeGc(): () => Record<string, { n: number; ms: number }> {
  let gcs: Record<string, { n: number; ms: number }> = {};
  const kinds: Record<number, string> = { [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor', [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb' };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = kinds[(e as unknown as { detail?: { kind?: number } }).detail?.kind ?? -1] ?? 'other';
      const g = (gcs[kind] ??= { n: 0, ms: 0 });
      g.n++;
      g.ms = round1(g.ms + e.duration);
    }
  }).observe({ entryTypes: ['gc'] });
  return () => {
    const out = gcs;
    gcs = {};
    return out;
  };
}

/** Messages handed to the inference workers and the main-thread time postMessage took; take() reads and resets. */
function probeWorkerMessages(): () => { n: number; msEach: number; totalMs: number } {
  let post = { n: 0, ms: 0 };
  const postMessage = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (this: Worker, ...args: Parameters<Worker['postMessage']>) {
    const t0 = performance.now();
    postMessage.apply(this, args);
    post.ms += performance.now() - t0;
    post.n++;
  };
  return () => {
    const out = { n: post.n, msEach: post.n ? Math.round((post.ms / post.n) * 1000) / 1000 : 0, totalMs: Math.round(post.ms) };
    post = { n: 0, ms: 0 };
    return out;
  };
}

/** Event-loop delay, ms; take() reads and resets. */
function probeEventLoop(): () => { p50: number; p99: number; max: number } {
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  return () => {
    const out = { p50: round1(loop.percentile(50) / 1e6), p99: round1(loop.percentile(99) / 1e6), max: round1(loop.max / 1e6) };
    loop.reset();
    return out;
  };
}

/** stdin "mem": memory after a full GC (with --expose-gc; "memtrim": then malloc_trim first). */
async function memoryReport(command: string, hub: NonNullable<Awaited<ReturnType<typeof startApp>>['hub']>): Promise<string> {
  // full GC first when node runs with --expose-gc (bench/grpc/idle.ts): what stays is really held
  (globalThis as { gc?: () => void }).gc?.();
  const t0 = performance.now();
  if (command.includes('memtrim')) await trimNativeMemory();
  const trimMs = round1(performance.now() - t0);
  const m = process.memoryUsage();
  const mib = (x: number): number => Math.round(x / 1048576);
  return JSON.stringify({ mem: { rss: mib(m.rss), heapUsed: mib(m.heapUsed), external: mib(m.external), arrayBuffers: mib(m.arrayBuffers) }, trimMs, stats: hub.snapshot() });
}

/**
 * CPU seconds of each of this process's threads (Linux /proc; {} elsewhere), keyed by thread id.
 * The main thread's id is the process id; the inference workers are the busiest of the others.
 * Unlike the pool's busy time (wall clock inside onnxruntime, which counts the time a worker waits
 * for a core), this is time on a core.
 */
function threadCpu(): Record<string, number> {
  const out: Record<string, number> = {};
  const tick = 100; // USER_HZ: clock ticks per second on Linux
  try {
    for (const tid of fs.readdirSync('/proc/self/task')) {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out[tid] = (Number(f[11]) + Number(f[12])) / tick; // utime, stime (fields 14 and 15)
    }
  } catch {
    // not Linux: no per-thread figures
  }
  return out;
}

async function main(): Promise<void> {
  const maxBatch = process.env['GRPC_MAX_BATCH'] ? Number(process.env['GRPC_MAX_BATCH']) : undefined;
  const dispatchIntervalMs = process.env['GRPC_DISPATCH_INTERVAL_MS'] ? Number(process.env['GRPC_DISPATCH_INTERVAL_MS']) : undefined;
  const depth = process.env['GRPC_DEPTH'] ? Number(process.env['GRPC_DEPTH']) : undefined;
  const bundle = process.env['GRPC_BUNDLE'] ? Number(process.env['GRPC_BUNDLE']) : undefined;
  const behindWaitMs = process.env['GRPC_BEHIND_WAIT_MS'] ? Number(process.env['GRPC_BEHIND_WAIT_MS']) : undefined;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-bench-stream-'));
  const app = await startApp({
    logger: false,
    startWorker: false,
    startDispatcher: false,
    config: defaultConfig({ host: '127.0.0.1', port: 0, grpcPort: 0, dataDir, concurrency: 0, apiKeys: [{ key: BENCH_KEY, organizationId: 'bench', projectId: 'bench' }], logLevel: 'silent' }),
    streaming: { maxStreams: 100_000, maxStreamsPerKey: 100_000, statefulModels: process.env['GRPC_STATEFUL'] !== '0', ...(maxBatch ? { maxBatch } : {}), ...(dispatchIntervalMs !== undefined ? { dispatchIntervalMs } : {}), ...(depth !== undefined ? { depth } : {}), ...(bundle !== undefined ? { bundle } : {}), ...(behindWaitMs !== undefined ? { behindWaitMs } : {}) },
  });
  const hub = app.hub!;
  const engine = hub.engine;
  const [roundTrips, loopDelay, gc, workerMessages] = [probeRoundTrips(engine), probeEventLoop(), probeGc(), probeWorkerMessages()];
  process.stdout.write(JSON.stringify({ port: app.grpcPort, url: app.url, pid: process.pid }) + '\n');
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', async (d: string) => {
    if (d.includes('mem')) process.stdout.write((await memoryReport(d, hub)) + '\n');
    if (d.includes('cpu')) {
      const u = process.cpuUsage();
      const report = { cpuSec: (u.user + u.system) / 1e6, threadCpuSec: threadCpu(), stats: hub.snapshot(), pool: engine.pool.stats, inferenceMs: roundTrips(), loopMs: loopDelay(), postMessages: workerMessages(), gcMs: gc() };
      process.stdout.write(JSON.stringify(report) + '\n');
    }
  });
  process.once('SIGTERM', () => {
    void app.close().then(() => {
      fs.rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    });
  });
}

void main();
