/**
 * The streaming service in its own process (bench/grpc/server.ts), for the benchmarks that drive it from another
 * one: bench/grpc/run.ts and bench/provisional/run.ts. Separate from server.ts, which starts the server when loaded.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as path from 'node:path';

/** The API key the benchmark server accepts. */
export const BENCH_KEY = 'bench-grpc-key-0001';

/** stateful: live streams through the stateful streaming graphs (the default); windowed: the reference. */
export type Mode = 'stateful' | 'windowed';

/** Percentiles of round trips, ms. */
export type Trips = { n: number; p50: number; p99: number; max: number };

export interface ServerUsage {
  cpuSec: number;
  /** CPU seconds per thread id (Linux); the main thread's id is the server's pid. */
  threadCpuSec?: Record<string, number>;
  pool: { calls: number; windows: number; steps: number; busyMs: number; encoderWindows?: number; encoderBusyMs?: number; windowsBehind?: number; byGraph?: Record<string, { busyMs: number; calls: number; windows: number }> };
  /** Inference round trips since the last report, ms. */
  /** Round trips of the networks' calls and, apart, of the pretrained encoders' windows. */
  inferenceMs: { networks: Trips; encoders: Trips };
  /** Server event-loop delay since the last report, ms. */
  loopMs: { p50: number; p99: number; max: number };
  /** Messages posted to the inference workers since the last report and the main-thread time they took. */
  postMessages?: { n: number; msEach: number; totalMs: number };
  /** Main-thread garbage collections since the last report, by kind. */
  gcMs?: Record<string, { n: number; ms: number }>;
}

export class ServerProcess {
  private lines: string[] = [];
  private waiters: ((l: string) => void)[] = [];
  private constructor(readonly child: ChildProcessWithoutNullStreams) {
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      buf += d;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const w = this.waiters.shift();
        if (w) w(line);
        else this.lines.push(line);
      }
    });
  }
  static async start(mode: Mode): Promise<{ proc: ServerProcess; port: number; url: string }> {
    const env = { ...process.env, GRPC_STATEFUL: mode === 'stateful' ? '1' : '0' };
    // GRPC_SERVER_NODE_ARGS: extra node flags for the server process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
    const nodeArgs = (process.env['GRPC_SERVER_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '');
    const child = spawn(process.execPath, [...nodeArgs, path.join(__dirname, 'server.js')], { stdio: ['pipe', 'pipe', 'inherit'], env }) as unknown as ChildProcessWithoutNullStreams;
    const proc = new ServerProcess(child);
    const first = JSON.parse(await proc.next()) as { port: number; url: string };
    return { proc, port: first.port, url: first.url };
  }
  /** The server's process id (its main thread's id). */
  get pid(): number {
    return this.child.pid ?? 0;
  }
  next(): Promise<string> {
    const l = this.lines.shift();
    if (l !== undefined) return Promise.resolve(l);
    return new Promise((r) => this.waiters.push(r));
  }
  async usage(): Promise<ServerUsage> {
    this.child.stdin.write('cpu\n');
    return JSON.parse(await this.next()) as ServerUsage;
  }
  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.kill('SIGTERM');
    });
  }
}

