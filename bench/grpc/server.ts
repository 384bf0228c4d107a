/**
 * The gRPC streaming server alone, for bench/grpc/run.ts (its own process, so the load
 * generator does not share its event loop). Prints {"port", "pid"} as one JSON line once
 * listening; reports its CPU time on stdin "cpu\n"; exits on SIGTERM after a clean shutdown.
 * Options from the environment: AURIS_INFERENCE_THREADS (engine workers), GRPC_MAX_BATCH,
 * GRPC_STATEFUL=0 (windowed calls only, no stateful streaming graphs: the reference).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ApiKeyRegistry } from '../../src/http/auth';
import { AnalysisGrpcServer } from '../../src/grpc/server';

export const BENCH_KEY = 'bench-grpc-key-0001';

async function main(): Promise<void> {
  const maxBatch = process.env['GRPC_MAX_BATCH'] ? Number(process.env['GRPC_MAX_BATCH']) : undefined;
  const srv = await AnalysisGrpcServer.create({
    keys: new ApiKeyRegistry([{ key: BENCH_KEY, organizationId: 'bench', projectId: 'bench' }]),
    maxStreams: 100_000,
    statefulModels: process.env['GRPC_STATEFUL'] !== '0',
    ...(maxBatch ? { maxBatch } : {}),
  });
  // Inference round trips (window submitted -> probabilities back) and event-loop delay, per report.
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  let trips: number[] = [];
  const engine = srv.engine;
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
  const port = await srv.listen('127.0.0.1', 0);
  process.stdout.write(JSON.stringify({ port, pid: process.pid }) + '\n');
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d: string) => {
    if (d.includes('cpu')) {
      const u = process.cpuUsage();
      const sorted = trips.sort((a, b) => a - b);
      const q = (p: number): number => Math.round((sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN) * 10) / 10;
      const inferenceMs = { n: sorted.length, p50: q(0.5), p99: q(0.99), max: q(1) };
      const loopMs = { p50: Math.round(loop.percentile(50) / 1e5) / 10, p99: Math.round(loop.percentile(99) / 1e5) / 10, max: Math.round(loop.max / 1e5) / 10 };
      trips = [];
      loop.reset();
      process.stdout.write(JSON.stringify({ cpuSec: (u.user + u.system) / 1e6, stats: srv.stats(), pool: srv.engine.pool.stats, inferenceMs, loopMs }) + '\n');
    }
  });
  process.once('SIGTERM', () => {
    void srv.close(2000).then(() => process.exit(0));
  });
}

void main();
