/**
 * The streaming service alone, for bench/grpc/run.ts (its own process, so the load generator
 * does not share its event loop): src/app.ts with gRPC and the WebSocket over one StreamHub, no
 * job workers. Prints {"port", "url", "pid"} as one JSON line once listening (port: gRPC, url:
 * REST/WebSocket); reports its CPU time on stdin "cpu\n"; exits on SIGTERM after a clean shutdown.
 * Options from the environment: AURIS_INFERENCE_THREADS (engine workers), GRPC_MAX_BATCH, GRPC_DISPATCH_INTERVAL_MS,
 * GRPC_STATEFUL=0 (windowed calls only, no stateful streaming graphs: the reference).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { startApp } from '../../src/app';
import { trimNativeMemory } from '../../src/audio';
import { defaultConfig } from '../../src/config';

export const BENCH_KEY = 'bench-grpc-key-0001';

async function main(): Promise<void> {
  const maxBatch = process.env['GRPC_MAX_BATCH'] ? Number(process.env['GRPC_MAX_BATCH']) : undefined;
  const dispatchIntervalMs = process.env['GRPC_DISPATCH_INTERVAL_MS'] ? Number(process.env['GRPC_DISPATCH_INTERVAL_MS']) : undefined;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-bench-stream-'));
  const app = await startApp({
    logger: false,
    startWorker: false,
    startDispatcher: false,
    config: defaultConfig({ host: '127.0.0.1', port: 0, grpcPort: 0, dataDir, concurrency: 0, apiKeys: [{ key: BENCH_KEY, organizationId: 'bench', projectId: 'bench' }], logLevel: 'silent' }),
    streaming: { maxStreams: 100_000, maxStreamsPerKey: 100_000, statefulModels: process.env['GRPC_STATEFUL'] !== '0', ...(maxBatch ? { maxBatch } : {}), ...(dispatchIntervalMs !== undefined ? { dispatchIntervalMs } : {}) },
  });
  const hub = app.hub!;
  // Inference round trips (window submitted -> probabilities back) and event-loop delay, per report.
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  let trips: number[] = [];
  const engine = hub.engine;
  const infer = engine.infer.bind(engine);
  engine.infer = (model, features, steps) => {
    const t0 = performance.now();
    const p = infer(model, features, steps);
    void p.then(() => trips.push(performance.now() - t0), () => undefined);
    return p;
  };
  const inferStateful = engine.inferStateful.bind(engine);
  engine.inferStateful = (model, first, features, steps, state) => {
    const t0 = performance.now();
    const p = inferStateful(model, first, features, steps, state);
    void p.then(() => trips.push(performance.now() - t0), () => undefined);
    return p;
  };
  // Main-thread time spent handing messages to the inference workers (postMessage), per report.
  let post = { n: 0, ms: 0 };
  const postMessage = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (this: Worker, ...args: Parameters<Worker['postMessage']>) {
    const t0 = performance.now();
    postMessage.apply(this, args);
    post.ms += performance.now() - t0;
    post.n++;
  };
  process.stdout.write(JSON.stringify({ port: app.grpcPort, url: app.url, pid: process.pid }) + '\n');
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', async (d: string) => {
    if (d.includes('mem')) {
      // full GC first when node runs with --expose-gc (bench/grpc/idle.ts): what stays is really held
      (globalThis as { gc?: () => void }).gc?.();
      const t0 = performance.now();
      if (d.includes('memtrim')) await trimNativeMemory();
      const trimMs = Math.round((performance.now() - t0) * 10) / 10;
      const m = process.memoryUsage();
      const mib = (x: number): number => Math.round(x / 1048576);
      process.stdout.write(JSON.stringify({ mem: { rss: mib(m.rss), heapUsed: mib(m.heapUsed), external: mib(m.external), arrayBuffers: mib(m.arrayBuffers) }, trimMs, stats: hub.snapshot() }) + '\n');
    }
    if (d.includes('cpu')) {
      const u = process.cpuUsage();
      const sorted = trips.sort((a, b) => a - b);
      const q = (p: number): number => Math.round((sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN) * 10) / 10;
      const inferenceMs = { n: sorted.length, p50: q(0.5), p99: q(0.99), max: q(1) };
      const loopMs = { p50: Math.round(loop.percentile(50) / 1e5) / 10, p99: Math.round(loop.percentile(99) / 1e5) / 10, max: Math.round(loop.max / 1e5) / 10 };
      const postMessages = { n: post.n, msEach: post.n ? Math.round((post.ms / post.n) * 1000) / 1000 : 0, totalMs: Math.round(post.ms) };
      trips = [];
      post = { n: 0, ms: 0 };
      loop.reset();
      process.stdout.write(JSON.stringify({ cpuSec: (u.user + u.system) / 1e6, stats: hub.snapshot(), pool: engine.pool.stats, inferenceMs, loopMs, postMessages }) + '\n');
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
